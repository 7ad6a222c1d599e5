#include "gateway/tls_front.h"

#include <fmt/format.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <thread>
#include <variant>
#include <vector>

#include "base/log.h"
#include "net/connection_limits.h"

namespace warren::gateway {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;
using TlsStream = asio::ssl::stream<tcp::socket>;

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
constexpr size_t kChunk = 16 * 1024;  // one TLS record

std::string AddressKey(const tcp::endpoint& peer) {
  asio::ip::address a = peer.address();
  if (a.is_v6() && a.to_v6().is_v4_mapped()) {
    a = asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6());
  }
  if (a.is_v4()) {
    auto b = a.to_v4().to_bytes();
    return std::string(b.begin(), b.end());
  }
  auto b = a.to_v6().to_bytes();
  return std::string(b.begin(), b.end());
}

class Front final : public TlsFront {
 public:
  explicit Front(TlsFrontOptions options)
      : options_(std::move(options)),
        limits_(options_.max_connections, options_.max_connections_per_address),
        ssl_(asio::ssl::context::tls_server),
        acceptor_(ioc_) {}
  ~Front() override { Stop(); }

  Status Open() {
    error_code ec;
    ssl_.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                         asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                         asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use,
                     ec);
    ssl_.use_certificate_chain_file(options_.certificate_chain, ec);
    if (ec) {
      return InvalidArgumentError(
          fmt::format("TLS certificate {}: {}", options_.certificate_chain, ec.message()));
    }
    ssl_.use_private_key_file(options_.private_key, asio::ssl::context::pem, ec);
    if (ec) {
      return InvalidArgumentError(
          fmt::format("TLS key {}: {}", options_.private_key, ec.message()));
    }
    auto address = asio::ip::make_address(options_.address, ec);
    if (ec) return InvalidArgumentError(fmt::format("TLS address \"{}\"", options_.address));
    auto upstream = asio::ip::make_address(options_.upstream_address, ec);
    if (ec || options_.upstream_port == 0) {
      return InvalidArgumentError(fmt::format("TLS front: no gateway to relay to ({}:{})",
                                              options_.upstream_address, options_.upstream_port));
    }
    upstream_ = tcp::endpoint(upstream, options_.upstream_port);
    tcp::endpoint endpoint(address, options_.port);
    acceptor_.open(endpoint.protocol(), ec);
    if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor_.bind(endpoint, ec);
    if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return UnavailableError(
          fmt::format("HTTPS listener {}:{}: {}", options_.address, options_.port, ec.message()));
    }
    port_ = acceptor_.local_endpoint().port();
    asio::co_spawn(ioc_, Accept(), asio::detached);
    for (int i = 0; i < std::max(1, options_.threads); ++i) {
      threads_.emplace_back([this] { ioc_.run(); });
    }
    base::Logger("gateway")->info("HTTPS listening address={} port={} certificate={}",
                                  options_.address, port_, options_.certificate_chain);
    return Status::Ok();
  }

  uint16_t port() const override { return port_; }

  TlsFrontStats stats() const override {
    return {.accepted = accepted_.load(),
            .failed_handshakes = failed_.load(),
            .rejected = rejected_.load(),
            .open = limits_.open()};
  }

  void Stop() override {
    if (stopped_.exchange(true)) return;
    ioc_.stop();
    for (auto& t : threads_) t.join();
    threads_.clear();
    error_code ignored;
    acceptor_.close(ignored);  // no thread runs the loop any more
  }

 private:
  asio::awaitable<void> Accept() {
    asio::steady_timer backoff(ioc_);
    for (;;) {
      auto strand = asio::make_strand(ioc_);
      auto [ec, socket] = co_await acceptor_.async_accept(strand, kNoThrow);
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) co_return;
      if (ec) {
        // EMFILE and the like: the listener stays readable, so retrying at once would spin.
        backoff.expires_after(std::chrono::milliseconds(50));
        co_await backoff.async_wait(kNoThrow);
        continue;
      }
      error_code peer_ec;
      tcp::endpoint peer = socket.remote_endpoint(peer_ec);
      if (peer_ec) continue;
      std::string key = AddressKey(peer);
      if (limits_.TryAdmit(key) != net::Admission::kAdmitted) {
        ++rejected_;
        continue;  // closed by the socket's end
      }
      asio::co_spawn(strand, Serve(std::move(socket), std::move(key)), asio::detached);
    }
  }

  // One client connection and its relay to the gateway; both directions run on its strand.
  struct Conn {
    Conn(tcp::socket socket, asio::ssl::context& ssl)
        : tls(std::move(socket), ssl), upstream(tls.get_executor()) {}
    TlsStream tls;
    tcp::socket upstream;
    bool client_reading = true;  // ClientToGateway has not ended
    bool gateway_done = false;   // the gateway closed (or the client cannot be written)
  };

  asio::awaitable<void> Serve(tcp::socket socket, std::string key) {
    struct Admitted {
      net::ConnectionLimits& limits;
      std::string key;
      ~Admitted() { limits.Release(key); }
    } admitted{limits_, std::move(key)};
    Conn c(std::move(socket), ssl_);
    asio::steady_timer deadline(c.tls.get_executor());
    deadline.expires_after(options_.handshake_timeout);
    // Whichever ends first cancels the other, and both are done before the frame goes.
    auto raced = co_await (c.tls.async_handshake(asio::ssl::stream_base::server, kNoThrow) ||
                           deadline.async_wait(kNoThrow));
    if (raced.index() != 0 || std::get<0>(std::get<0>(raced))) {
      ++failed_;
      co_return;
    }
    auto [connect] = co_await c.upstream.async_connect(upstream_, kNoThrow);
    if (connect) {
      base::Logger("gateway")->warn("HTTPS: the gateway listener {}:{} refused a relay: {}",
                                    upstream_.address().to_string(), upstream_.port(),
                                    connect.message());
      co_return;
    }
    ++accepted_;
    error_code ignored;
    c.tls.lowest_layer().set_option(tcp::no_delay(true), ignored);
    c.upstream.set_option(tcp::no_delay(true), ignored);
    co_await (ClientToGateway(c) && GatewayToClient(c));
  }

  // Ends the client's TLS session properly (close_notify, so a response the close delimits is
  // not taken for a truncation), waiting a moment for the client's own, then closes.
  static asio::awaitable<void> CloseTls(Conn& c) {
    asio::steady_timer limit(c.tls.get_executor());
    limit.expires_after(std::chrono::seconds(1));
    co_await (c.tls.async_shutdown(kNoThrow) || limit.async_wait(kNoThrow));
    error_code ignored;
    c.tls.lowest_layer().close(ignored);
    c.upstream.close(ignored);
  }

  // The client's requests to the gateway. When the client is done (close_notify, EOF or an
  // error), the gateway is told by a half-close and finishes what it is answering; when the
  // gateway closed first (its read was cancelled), the TLS session ends here.
  static asio::awaitable<void> ClientToGateway(Conn& c) {
    std::vector<char> buf(kChunk);
    while (!c.gateway_done) {
      auto [ec, n] = co_await c.tls.async_read_some(asio::buffer(buf), kNoThrow);
      if (n > 0 && !c.gateway_done) {
        auto [wec, written] =
            co_await asio::async_write(c.upstream, asio::buffer(buf.data(), n), kNoThrow);
        if (wec) break;
      }
      if (ec) break;
    }
    c.client_reading = false;
    if (c.gateway_done) {
      co_await CloseTls(c);
    } else {
      error_code ignored;
      c.upstream.shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

  // The gateway's answers to the client. When the gateway closes, so does the client's
  // session: by the reading side when it still reads (its read is cancelled), else here.
  static asio::awaitable<void> GatewayToClient(Conn& c) {
    std::vector<char> buf(kChunk);
    for (;;) {
      auto [ec, n] = co_await c.upstream.async_read_some(asio::buffer(buf), kNoThrow);
      if (n > 0) {
        auto [wec, written] =
            co_await asio::async_write(c.tls, asio::buffer(buf.data(), n), kNoThrow);
        if (wec) break;
      }
      if (ec) break;
    }
    c.gateway_done = true;
    error_code ignored;
    if (c.client_reading) {
      c.tls.lowest_layer().cancel(ignored);
    } else {
      co_await CloseTls(c);
    }
  }

  const TlsFrontOptions options_;
  net::ConnectionLimits limits_;
  asio::ssl::context ssl_;
  tcp::endpoint upstream_;
  uint16_t port_ = 0;
  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> failed_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<bool> stopped_{false};
  std::vector<std::thread> threads_;
  // Last: destroyed first, with the connections' coroutines, which still use what is above.
  asio::io_context ioc_;
  tcp::acceptor acceptor_;
};

}  // namespace

Result<std::unique_ptr<TlsFront>> TlsFront::Start(TlsFrontOptions options) {
  auto front = std::make_unique<Front>(std::move(options));
  RETURN_IF_ERROR(front->Open());
  return std::unique_ptr<TlsFront>(std::move(front));
}

}  // namespace warren::gateway
