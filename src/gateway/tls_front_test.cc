#include "gateway/tls_front.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <thread>

#include "base/testing/temp_dir.h"
#include "base/unique_fd.h"
#include "gateway/tls_certificate.h"
#include "net/http_server.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;

base::UniqueFd ConnectTcp(uint16_t port) {
  base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) return {};
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  setsockopt(fd.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

struct SslCtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

// An HTTPS client as a browser is one: verifies the chain against `ca` (none: the system's)
// and the name against `host`, sends SNI. Returns the whole answer, or why it failed.
struct Exchange {
  bool handshake = false;
  bool clean_close = false;  // the server ended the session with close_notify
  std::string answer;
  std::string error;
};

Exchange HttpsGet(uint16_t port, const std::string& host, const std::string& ca,
                  const std::string& request) {
  Exchange out;
  std::unique_ptr<SSL_CTX, SslCtxFree> ctx(SSL_CTX_new(TLS_client_method()));
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  if (!ca.empty()) SSL_CTX_load_verify_locations(ctx.get(), ca.c_str(), nullptr);
  base::UniqueFd fd = ConnectTcp(port);
  if (!fd) {
    out.error = "connect failed";
    return out;
  }
  std::unique_ptr<SSL, SslFree> ssl(SSL_new(ctx.get()));
  SSL_set_fd(ssl.get(), fd.get());
  SSL_set_tlsext_host_name(ssl.get(), host.c_str());
  SSL_set1_host(ssl.get(), host.c_str());
  if (SSL_connect(ssl.get()) != 1) {
    char buf[256];
    ERR_error_string_n(ERR_get_error(), buf, sizeof(buf));
    out.error = buf;
    ERR_clear_error();
    return out;
  }
  out.handshake = true;
  SSL_write(ssl.get(), request.data(), static_cast<int>(request.size()));
  char buf[4096];
  for (;;) {
    int n = SSL_read(ssl.get(), buf, sizeof(buf));
    if (n <= 0) {
      out.clean_close = SSL_get_error(ssl.get(), n) == SSL_ERROR_ZERO_RETURN;
      ERR_clear_error();
      break;
    }
    out.answer.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::string GetRequest(const std::string& host, const std::string& connection = "close") {
  return "GET /who HTTP/1.1\r\nHost: " + host + "\r\nConnection: " + connection + "\r\n\r\n";
}

class TlsFrontTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The client below writes with write(2): a connection the front cut must not kill the test.
    signal(SIGPIPE, SIG_IGN);
    net::Router router;
    router.Add("GET", "/who", [](net::Request&& req, net::Responder r) {
      r.Send(net::Response::Text(200, "host=" + std::string(req.headers.Get("Host").value_or(""))));
    });
    upstream_ =
        net::HttpServer::Start(net::ServerOptions{.loop_threads = 1}, std::move(router)).value();
    files_ = EnsureWarrenCertificate(dir_.path() + "/tls", "sbx.example.test").value();
  }

  void StartFront(TlsFrontOptions options = {}) {
    options.port = 0;
    options.certificate_chain = files_.certificate_chain;
    options.private_key = files_.private_key;
    options.upstream_port = upstream_->port();
    front_ = TlsFront::Start(options).value();
  }

  base::testing::TempDir dir_;
  TlsFiles files_;
  std::unique_ptr<net::HttpServer> upstream_;
  std::unique_ptr<TlsFront> front_;
};

TEST_F(TlsFrontTest, AClientTrustingTheCaReachesTheGatewayWithItsHost) {
  StartFront();
  const std::string host = "49983-abc.sbx.example.test";
  Exchange e = HttpsGet(front_->port(), host, files_.ca, GetRequest(host));
  ASSERT_TRUE(e.handshake) << e.error;
  EXPECT_NE(e.answer.find("HTTP/1.1 200"), std::string::npos) << e.answer;
  EXPECT_NE(e.answer.find("host=" + host), std::string::npos) << e.answer;
  EXPECT_TRUE(e.clean_close) << "a close the gateway makes ends the session with close_notify";
  // Two requests on one connection: keep-alive passes through the relay.
  std::string two = GetRequest(host, "keep-alive") + GetRequest(host);
  Exchange k = HttpsGet(front_->port(), host, files_.ca, two);
  size_t first = k.answer.find("HTTP/1.1 200");
  ASSERT_NE(first, std::string::npos) << k.answer;
  EXPECT_NE(k.answer.find("HTTP/1.1 200", first + 1), std::string::npos) << k.answer;
  EXPECT_EQ(front_->stats().accepted, 2u);
}

TEST_F(TlsFrontTest, ClientsThatCannotVerifyOrSpeakPlainHttpGetNothing) {
  StartFront();
  // No trust in Warren's CA: the handshake fails on the client's side.
  Exchange untrusted = HttpsGet(front_->port(), "49983-abc.sbx.example.test", "", GetRequest("x"));
  EXPECT_FALSE(untrusted.handshake);
  EXPECT_NE(untrusted.error.find("certificate verify failed"), std::string::npos)
      << untrusted.error;
  // A name the certificate does not carry.
  Exchange other = HttpsGet(front_->port(), "api.other.test", files_.ca, GetRequest("x"));
  EXPECT_FALSE(other.handshake);
  // Plain HTTP on the TLS port is not relayed.
  base::UniqueFd plain = ConnectTcp(front_->port());
  std::string req = GetRequest("49983-abc.sbx.example.test");
  ASSERT_EQ(write(plain.get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  char buf[256];
  ssize_t n = read(plain.get(), buf, sizeof(buf));
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0).find("host="), std::string::npos);
  for (int i = 0; i < 100 && front_->stats().failed_handshakes < 3; ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(front_->stats().failed_handshakes, 3u);
  EXPECT_EQ(front_->stats().accepted, 0u);
}

TEST_F(TlsFrontTest, AStalledHandshakeIsDroppedAndPerAddressLimitsHold) {
  StartFront({.max_connections_per_address = 1, .handshake_timeout = 300ms});
  base::UniqueFd silent = ConnectTcp(front_->port());  // holds the one slot, says nothing
  for (int i = 0; i < 100 && front_->stats().open < 1; ++i) std::this_thread::sleep_for(10ms);
  const std::string host = "49983-abc.sbx.example.test";
  Exchange refused = HttpsGet(front_->port(), host, files_.ca, GetRequest(host));
  EXPECT_FALSE(refused.handshake) << "over the per-address limit";
  EXPECT_EQ(front_->stats().rejected, 1u);
  // The silent one is cut at the handshake deadline, which frees the slot.
  char c;
  EXPECT_EQ(read(silent.get(), &c, 1), 0);
  for (int i = 0; i < 100 && front_->stats().open > 0; ++i) std::this_thread::sleep_for(10ms);
  Exchange ok = HttpsGet(front_->port(), host, files_.ca, GetRequest(host));
  EXPECT_TRUE(ok.handshake) << ok.error;
  EXPECT_NE(ok.answer.find("host=" + host), std::string::npos);
}

TEST_F(TlsFrontTest, BadFilesAndBusyPortsAreNamedAtStart) {
  TlsFrontOptions o;
  o.port = 0;
  o.certificate_chain = dir_.path() + "/missing.crt";
  o.private_key = files_.private_key;
  o.upstream_port = upstream_->port();
  auto missing = TlsFront::Start(o);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.crt"), std::string::npos) << missing.status();
  StartFront();
  o.certificate_chain = files_.certificate_chain;
  o.port = front_->port();
  auto busy = TlsFront::Start(o);
  ASSERT_FALSE(busy.ok());
  EXPECT_NE(busy.status().message().find("HTTPS listener"), std::string::npos) << busy.status();
}

}  // namespace
}  // namespace warren::gateway
