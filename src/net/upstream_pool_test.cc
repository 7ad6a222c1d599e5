// The server's UpstreamPool through Responder::ProxyPooled and ProxyOptions::pool_key, the way
// the gateway keeps connections into sandboxes: real sockets, a hand-driven upstream that shows
// which connection each request arrived on and when the proxy closed one.

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "net/dial.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "net/testing/notification.h"
#include "net/testing/raw_client.h"

namespace warren::net {
namespace {

using testing::Notification;
using testing::RawClient;
using testing::RawListener;
using namespace std::chrono_literals;

constexpr std::string_view kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

class UpstreamPoolTest : public ::testing::Test {
 protected:
  // A proxy with one loop (every connection lands on it) whose handler relays to the listener:
  // over an idle pooled connection of key ("sbx", 80, generation_) when there is one, else
  // over a new one.
  void StartProxy(uint16_t upstream_port, std::chrono::milliseconds idle = 10s,
                  UpstreamPoolOptions pool = {}) {
    Router router;
    router.SetFallback(
        [this, upstream_port, idle](Request&&, Responder r) {
          UpstreamKey key{"sbx", 80, generation_.load()};
          ProxyOptions options;
          options.pool_key = key;
          options.pool_idle_timeout = idle;
          if (r.ProxyPooled(key, options)) {
            ++reused_;
            return;
          }
          EXPECT_TRUE(options.pool_key.has_value()) << "a miss must leave the options alone";
          auto fd = DialTcp("127.0.0.1", upstream_port, 2s);
          if (!fd.ok()) {
            r.Send(Response::Text(502, fd.status().ToString()));
            return;
          }
          ++dialed_;
          r.Proxy(std::move(*fd), std::move(options));
        },
        RouteOptions{.stream_body = true});
    ServerOptions options;
    options.loop_threads = 1;
    options.upstream_pool = pool;
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status();
    proxy_ = std::move(*server);
  }

  std::unique_ptr<HttpClient> Client() {
    auto c = HttpClient::ForAddress("127.0.0.1:" + std::to_string(proxy_->port()));
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  static std::string Body(HttpClient& client) {
    auto resp = client.Do({.target = "/"});
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? resp->body : std::string();
  }

  bool WaitIdle(size_t n) {
    for (int i = 0; i < 500 && proxy_->upstream_pool().idle_count() != n; ++i) {
      std::this_thread::sleep_for(10ms);
    }
    return proxy_->upstream_pool().idle_count() == n;
  }

  std::atomic<uint64_t> generation_{1};
  std::atomic<int> dialed_{0};
  std::atomic<int> reused_{0};
  std::unique_ptr<HttpServer> proxy_;
};

TEST_F(UpstreamPoolTest, ReusesTheConnectionOnItsLoopAndDropGroupClosesIt) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  std::atomic<int> served{0};
  std::atomic<bool> asked_to_close{false};
  std::atomic<bool> closed_by_proxy{false};
  Notification served_three;
  std::thread upstream([&] {
    auto conn = listener->Accept();
    if (!conn.ok()) return;
    for (int i = 0; i < 3; ++i) {
      if (!conn->ReadUntil("\r\n\r\n").ok()) return;
      if (conn->received().find("Connection: close") != std::string::npos) asked_to_close = true;
      conn->received().clear();
      if (!conn->Send(kOk).ok()) return;
      ++served;
    }
    served_three.Notify();
    closed_by_proxy = conn->WaitClosed(10s);
  });
  StartProxy(listener->port());
  auto one = Client();
  EXPECT_EQ(Body(*one), "ok");
  EXPECT_EQ(Body(*one), "ok");
  auto another = Client();  // another client connection, the same loop
  EXPECT_EQ(Body(*another), "ok");
  ASSERT_TRUE(served_three.WaitFor(10s));
  EXPECT_EQ(served.load(), 3) << "every request rode the first upstream connection";
  EXPECT_FALSE(asked_to_close.load());
  EXPECT_EQ(dialed_.load(), 1);
  EXPECT_EQ(reused_.load(), 2);
  EXPECT_TRUE(WaitIdle(1));

  proxy_->upstream_pool().DropGroup("another");
  EXPECT_EQ(proxy_->upstream_pool().idle_count(), 1u);
  proxy_->upstream_pool().DropGroup("sbx");
  upstream.join();
  EXPECT_TRUE(closed_by_proxy.load()) << "DropGroup left the idle connection open";
  EXPECT_TRUE(WaitIdle(0));
}

TEST_F(UpstreamPoolTest, AConnectionTheUpstreamClosedOrWroteOnIsNeverHandedOut) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  Notification closed, chatted;
  std::thread upstream([&] {
    auto first = listener->Accept();
    if (!first.ok() || !first->ReadUntil("\r\n\r\n").ok()) return;
    (void)first->Send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none");
    first->Close();  // the server's own keep-alive timeout, say
    closed.Notify();
    auto second = listener->Accept();
    if (!second.ok() || !second->ReadUntil("\r\n\r\n").ok()) return;
    (void)second->Send("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\ntwo");
    (void)second->Send("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
    chatted.Notify();
    auto third = listener->Accept();
    if (!third.ok() || !third->ReadUntil("\r\n\r\n").ok()) return;
    (void)third->Send("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree");
    third->WaitClosed(10s);
  });
  StartProxy(listener->port());
  auto client = Client();
  EXPECT_EQ(Body(*client), "one");
  ASSERT_TRUE(closed.WaitFor(10s));
  EXPECT_EQ(Body(*client), "two") << "the request went into the closed connection";
  ASSERT_TRUE(chatted.WaitFor(10s));
  EXPECT_EQ(Body(*client), "three") << "the request went into the connection with stray bytes";
  EXPECT_EQ(dialed_.load(), 3);
  EXPECT_EQ(reused_.load(), 0);
  proxy_->Shutdown(0ms);  // closes the third connection, which the upstream waits for
  upstream.join();
}

TEST_F(UpstreamPoolTest, AnotherGenerationDialsAndIdleConnectionsExpire) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  std::atomic<bool> first_closed{false};
  std::atomic<bool> second_closed{false};
  Notification second_served;
  std::thread upstream([&] {
    auto first = listener->Accept();
    if (!first.ok() || !first->ReadUntil("\r\n\r\n").ok() || !first->Send(kOk).ok()) return;
    auto second = listener->Accept();
    if (!second.ok() || !second->ReadUntil("\r\n\r\n").ok() || !second->Send(kOk).ok()) return;
    second_served.Notify();
    first_closed = first->WaitClosed(10s);
    second_closed = second->WaitClosed(10s);
  });
  StartProxy(listener->port(), /*idle=*/300ms);
  auto client = Client();
  EXPECT_EQ(Body(*client), "ok");
  generation_ = 2;  // the upstream's incarnation changed: its old connection must not serve
  EXPECT_EQ(Body(*client), "ok");
  ASSERT_TRUE(second_served.WaitFor(10s));
  EXPECT_EQ(dialed_.load(), 2);
  EXPECT_EQ(reused_.load(), 0);
  upstream.join();  // the second closes by itself once idle for 300 ms
  EXPECT_TRUE(first_closed.load()) << "a connection of the old generation was kept";
  EXPECT_TRUE(second_closed.load()) << "an idle connection outlived its idle timeout";
  EXPECT_TRUE(WaitIdle(0));
}

TEST_F(UpstreamPoolTest, AKeyKeepsAtMostItsLimitOfIdleConnections) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  std::atomic<int> closed{0};
  std::thread upstream([&] {
    // Two relays at once: both dial, both connections come back idle, one too many.
    auto a = listener->Accept();
    auto b = listener->Accept();
    if (!a.ok() || !b.ok()) return;
    if (!a->ReadUntil("\r\n\r\n").ok() || !b->ReadUntil("\r\n\r\n").ok()) return;
    if (!a->Send(kOk).ok() || !b->Send(kOk).ok()) return;
    closed += a->WaitClosed(2s) ? 1 : 0;
    closed += b->WaitClosed(100ms) ? 1 : 0;
  });
  StartProxy(listener->port(), 10s, UpstreamPoolOptions{.max_per_key = 1});
  std::thread second_client([&] {
    auto client = Client();
    EXPECT_EQ(Body(*client), "ok");
  });
  auto client = Client();
  EXPECT_EQ(Body(*client), "ok");
  second_client.join();
  upstream.join();
  EXPECT_EQ(closed.load(), 1);
  EXPECT_EQ(dialed_.load(), 2);
  EXPECT_EQ(proxy_->upstream_pool().idle_count(), 1u);
}

}  // namespace
}  // namespace warren::net
