#include "sbnet/domain_proxy.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/netfilter_ipv4.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/log.h"
#include "base/unique_fd.h"
#include "sbnet/sniff.h"

namespace warren::sbnet {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace asio::experimental::awaitable_operators;

constexpr auto kNoThrow = asio::as_tuple(asio::use_awaitable);
constexpr auto kSniffTimeout = std::chrono::seconds(10);
constexpr auto kConnectTimeout = std::chrono::seconds(10);
constexpr size_t kChunk = 16 * 1024;
constexpr int kPipeBytes = 256 << 10;

auto Log() {
  static auto logger = base::Logger("net");
  return logger;
}

os::Ipv4 ToIpv4(const asio::ip::address& a) {
  asio::ip::address_v4 v4 = a.is_v6() && a.to_v6().is_v4_mapped()
                                ? asio::ip::make_address_v4(asio::ip::v4_mapped, a.to_v6())
                                : (a.is_v4() ? a.to_v4() : asio::ip::address_v4());
  return os::Ipv4{htonl(v4.to_uint())};
}

// Where the sandbox was going before nftables redirected it here.
std::optional<tcp::endpoint> OriginalDestination(tcp::socket& s) {
  sockaddr_in dst{};
  socklen_t len = sizeof(dst);
  if (getsockopt(s.native_handle(), SOL_IP, SO_ORIGINAL_DST, &dst, &len) != 0) return std::nullopt;
  return tcp::endpoint(asio::ip::address_v4(ntohl(dst.sin_addr.s_addr)), ntohs(dst.sin_port));
}

struct Relay {
  explicit Relay(tcp::socket c) : client(std::move(c)), upstream(client.get_executor()) {}
  // What a deadline armed in `step` cuts: a timer that fired just as its step ended (its
  // handler already queued) must not cut the next one.
  enum class Step { kSniff, kConnect, kRelay };
  void CloseIfStill(Step at) {
    if (step == at) Close();
  }
  Step step = Step::kSniff;
  void Close() {
    error_code ignored;
    client.close(ignored);
    upstream.close(ignored);
  }
  tcp::socket client;
  tcp::socket upstream;
};

class Proxy final : public DomainProxy {
 public:
  explicit Proxy(Decide decide) : decide_(std::move(decide)), http_(ioc_), tls_(ioc_) {}
  ~Proxy() override {
    ioc_.stop();
    if (thread_.joinable()) thread_.join();
  }

  Status Listen(os::Ipv4 address) {
    asio::ip::address_v4 a(ntohl(address.be));
    for (tcp::acceptor* acceptor : {&http_, &tls_}) {
      error_code ec;
      acceptor->open(tcp::v4(), ec);
      int one = 1;
      // The gateway address is on a sandbox's link only while one is attached.
      if (!ec &&
          setsockopt(acceptor->native_handle(), SOL_IP, IP_FREEBIND, &one, sizeof(one)) != 0) {
        ec = error_code(errno, boost::system::system_category());
      }
      if (!ec) acceptor->bind(tcp::endpoint(a, 0), ec);
      if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
      if (ec) {
        return UnavailableError(
            fmt::format("domain proxy on {}: {}", os::FormatIpv4(address), ec.message()));
      }
    }
    asio::co_spawn(ioc_, Accept(http_, /*tls=*/false), asio::detached);
    asio::co_spawn(ioc_, Accept(tls_, /*tls=*/true), asio::detached);
    thread_ = std::thread([this] { ioc_.run(); });
    return Status::Ok();
  }

  uint16_t http_port() const override { return http_.local_endpoint().port(); }
  uint16_t tls_port() const override { return tls_.local_endpoint().port(); }
  DomainProxyStats stats() const override {
    return {.allowed = allowed_.load(), .denied = denied_.load(), .open = open_.load()};
  }

  // Per sandbox and in all: a sandbox opening connections it never reads must not take the
  // server's descriptors (each relay holds two sockets and a pipe each way).
  static constexpr size_t kMaxPerSource = 256;
  static constexpr uint64_t kMaxRelays = 4096;

  void CloseFrom(os::Ipv4 source) override {
    asio::post(ioc_, [this, key = source.be] {
      auto [begin, end] = relays_.equal_range(key);
      for (auto it = begin; it != end; ++it) {
        if (auto relay = it->second.lock()) relay->Close();
      }
    });
  }

 private:
  asio::awaitable<void> Accept(tcp::acceptor& acceptor, bool tls) {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(kNoThrow);
      if (ec == asio::error::operation_aborted) co_return;
      if (ec) {
        // EMFILE and the like: the listener stays readable, so retrying at once would spin.
        asio::steady_timer backoff(ioc_);
        backoff.expires_after(std::chrono::milliseconds(50));
        co_await backoff.async_wait(kNoThrow);
        continue;
      }
      asio::co_spawn(ioc_, Serve(std::make_shared<Relay>(std::move(socket)), tls), asio::detached);
    }
  }

  asio::awaitable<void> Serve(std::shared_ptr<Relay> relay, bool tls) {
    error_code ec;
    tcp::endpoint peer = relay->client.remote_endpoint(ec);
    auto destination = OriginalDestination(relay->client);
    if (ec || !destination) co_return;
    os::Ipv4 source = ToIpv4(peer.address());
    if (open_.load() >= kMaxRelays || relays_.count(source.be) >= kMaxPerSource) {
      ++denied_;
      Log()->warn("egress proxy full sandbox={} open={}", os::FormatIpv4(source), open_.load());
      co_return;
    }
    relays_.emplace(source.be, relay);
    ++open_;
    struct Unregister {
      Proxy& p;
      uint32_t key;
      const Relay* relay;
      ~Unregister() {
        // By value: the map may have rehashed since this relay went in.
        auto [begin, end] = p.relays_.equal_range(key);
        for (auto it = begin; it != end; ++it) {
          // The relay is alive here: a coroutine's parameters outlive its locals.
          if (it->second.lock().get() == relay) {
            p.relays_.erase(it);
            break;
          }
        }
        --p.open_;
      }
    } unregister{*this, source.be, relay.get()};

    // The first bytes, until they name the host or cannot.
    asio::steady_timer deadline(ioc_);
    deadline.expires_after(kSniffTimeout);
    deadline.async_wait([relay](const error_code& e) {
      if (!e) relay->CloseIfStill(Relay::Step::kSniff);
    });
    std::string first;
    Sniffed sniffed;
    while (!sniffed.complete && first.size() < kMaxSniffBytes) {
      size_t had = first.size();
      first.resize(had + kChunk);
      auto [rec, n] = co_await relay->client.async_read_some(
          asio::buffer(first.data() + had, kChunk), kNoThrow);
      first.resize(had + n);
      if (rec) break;
      sniffed = tls ? SniffTlsServerName(first) : SniffHttpHost(first);
    }
    deadline.cancel();
    // Cut meanwhile (the deadline, CloseFrom): nothing goes on.
    if (first.empty() || !relay->client.is_open()) co_return;
    os::Ipv4 to = ToIpv4(destination->address());
    if (!decide_(source, to, sniffed.host)) {
      ++denied_;
      Log()->debug("egress denied sandbox={} destination={}:{} host={}", os::FormatIpv4(source),
                   os::FormatIpv4(to), destination->port(), sniffed.host);
      co_return;
    }
    ++allowed_;
    relay->step = Relay::Step::kConnect;
    deadline.expires_after(kConnectTimeout);
    deadline.async_wait([relay](const error_code& e) {
      if (!e) relay->CloseIfStill(Relay::Step::kConnect);
    });
    auto [cec] = co_await relay->upstream.async_connect(*destination, kNoThrow);
    deadline.cancel();
    relay->step = Relay::Step::kRelay;
    if (cec || !relay->client.is_open()) co_return;
    error_code ignored;
    relay->client.set_option(asio::socket_base::keep_alive(true), ignored);
    relay->upstream.set_option(asio::socket_base::keep_alive(true), ignored);
    auto [wec, written] =
        co_await asio::async_write(relay->upstream, asio::buffer(first), kNoThrow);
    if (wec) co_return;
    co_await (Pump(relay->client, relay->upstream) && Pump(relay->upstream, relay->client));
  }

  // One direction, through a pipe with splice(2): the bytes never enter this process (a copy
  // through user space halved a download's speed). At its end the other side is told by a
  // half-close.
  static asio::awaitable<void> Pump(tcp::socket& from, tcp::socket& to) {
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) co_return;
    base::UniqueFd out(fds[0]);
    base::UniqueFd in(fds[1]);
    fcntl(in.get(), F_SETPIPE_SZ, kPipeBytes);  // the default 64 KiB when refused
    error_code ignored;
    from.native_non_blocking(true, ignored);
    to.native_non_blocking(true, ignored);
    size_t buffered = 0;
    bool done = false;
    while (!done) {
      ssize_t n = splice(from.native_handle(), nullptr, in.get(), nullptr, kPipeBytes,
                         SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
      if (n > 0) {
        buffered += static_cast<size_t>(n);
      } else if (n == 0) {
        done = true;  // EOF: what is buffered still goes
      } else if (errno == EAGAIN) {
        if (buffered == 0) {
          auto [ec] = co_await from.async_wait(tcp::socket::wait_read, kNoThrow);
          if (ec) break;
          continue;
        }
      } else if (errno != EINTR) {
        break;
      }
      while (buffered > 0) {
        ssize_t m = splice(out.get(), nullptr, to.native_handle(), nullptr, buffered,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (m > 0) {
          buffered -= static_cast<size_t>(m);
        } else if (m < 0 && errno == EAGAIN) {
          auto [ec] = co_await to.async_wait(tcp::socket::wait_write, kNoThrow);
          if (ec) break;
        } else if (m < 0 && errno == EINTR) {
          continue;
        } else {
          from.close(ignored);  // the receiver is gone: so is this direction
          done = true;
          buffered = 0;
        }
      }
    }
    to.shutdown(tcp::socket::shutdown_send, ignored);
  }

  Decide decide_;
  std::atomic<uint64_t> allowed_{0};
  std::atomic<uint64_t> denied_{0};
  std::atomic<uint64_t> open_{0};
  // On the loop's thread only: the relays of each source address (network order).
  std::unordered_multimap<uint32_t, std::weak_ptr<Relay>> relays_;
  std::thread thread_;
  // Last: destroyed first, with the relays' coroutines, which still use what is above.
  asio::io_context ioc_;
  tcp::acceptor http_;
  tcp::acceptor tls_;
};

}  // namespace

Result<std::unique_ptr<DomainProxy>> DomainProxy::Start(os::Ipv4 address, Decide decide) {
  auto proxy = std::make_unique<Proxy>(std::move(decide));
  RETURN_IF_ERROR(proxy->Listen(address));
  return std::unique_ptr<DomainProxy>(std::move(proxy));
}

}  // namespace warren::sbnet
