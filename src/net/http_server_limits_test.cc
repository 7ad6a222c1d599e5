// The server under clients that misbehave on purpose: too many connections, slow heads and
// bodies, responses nobody reads, one tenant flooding the blocking pool.

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <latch>
#include <thread>
#include <vector>

#include "net/http_server.h"
#include "net/testing/notification.h"
#include "net/testing/raw_client.h"

namespace warren::net {
namespace {

using testing::Notification;
using testing::RawClient;
using namespace std::chrono_literals;

bool Eventually(const std::function<bool()>& condition) {
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (std::chrono::steady_clock::now() < deadline) {
    if (condition()) return true;
    std::this_thread::sleep_for(10ms);
  }
  return condition();
}

class LimitsTest : public ::testing::Test {
 protected:
  void Start(ServerOptions options = {}) {
    Router router;
    router.Add("GET", "/whoami",
               [](Request&& req, Responder r) { r.Send(Response::Text(200, req.remote)); });
    router.Add("GET", "/big", [](Request&&, Responder r) {
      r.Send(Response::Text(200, std::string(64 << 20, 'x')));  // far more than socket buffers
    });
    router.Add("POST", "/echo",
               [](Request&& req, Responder r) { r.Send(Response::Text(200, req.body)); });
    RouteOptions blocking{.blocking = true};
    router.Add(
        "GET", "/hold",
        [this](Request&&, Responder r) {
          held_.fetch_add(1);
          release_.WaitFor(30s);
          r.Send(Response::Text(200, "held"));
        },
        blocking);
    router.Add(
        "GET", "/quick", [](Request&&, Responder r) { r.Send(Response::Text(200, "quick")); },
        blocking);
    RouteOptions by_tenant{.blocking = true};
    by_tenant.fairness_key = [](const Request& req) {
      return std::string(req.headers.Get("X-Tenant").value_or(""));
    };
    router.Add(
        "GET", "/tenant/hold",
        [this](Request&&, Responder r) {
          held_.fetch_add(1);
          release_.WaitFor(30s);
          r.Send(Response::Text(200, "held"));
        },
        by_tenant);
    router.Add(
        "GET", "/tenant/quick",
        [](Request&&, Responder r) { r.Send(Response::Text(200, "quick")); }, by_tenant);
    if (options.loop_threads == 0) options.loop_threads = 2;
    auto server = HttpServer::Start(options, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }

  void TearDown() override {
    release_.Notify();
    server_.reset();
  }

  RawClient From(const std::string& ip) {
    auto c = RawClient::ConnectFrom(ip, server_->port());
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  // One GET on `c`; the status, or 0 when the connection failed.
  static int Get(RawClient& c, const std::string& target, const std::string& headers = "") {
    if (!c.Send("GET " + target + " HTTP/1.1\r\nHost: t\r\n" + headers + "\r\n").ok()) return 0;
    auto resp = c.ReadResponse(5s);
    return resp.ok() ? resp->status : 0;
  }

  std::unique_ptr<HttpServer> server_;
  std::atomic<int> held_{0};
  Notification release_;
};

TEST_F(LimitsTest, AnAddressOverItsCapIsRefusedWhileAnotherIsServed) {
  ServerOptions options;
  options.max_connections_per_address = 2;
  Start(options);
  RawClient a1 = From("127.0.0.2");
  RawClient a2 = From("127.0.0.2");
  ASSERT_EQ(Get(a1, "/whoami"), 200);
  ASSERT_EQ(Get(a2, "/whoami"), 200);

  RawClient a3 = From("127.0.0.2");
  auto refused = a3.ReadResponse(5s);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many connections from 127.0.0.2 (limit 2 per client address)"),
            std::string::npos)
      << refused->body;
  EXPECT_TRUE(a3.WaitClosed());

  RawClient b = From("127.0.0.3");
  EXPECT_EQ(Get(b, "/whoami"), 200);
  ConnectionStats stats = server_->connection_stats();
  EXPECT_EQ(stats.rejected_address_full, 1u);
  EXPECT_EQ(stats.rejected_listener_full, 0u);
  EXPECT_EQ(stats.open, 3u);

  // A closed connection gives its place back.
  a1.Close();
  EXPECT_TRUE(Eventually([&] { return server_->connection_stats().open == 2; }));
  RawClient a4 = From("127.0.0.2");
  EXPECT_EQ(Get(a4, "/whoami"), 200);
}

TEST_F(LimitsTest, AFullListenerClosesItsLongestIdleConnectionForANewcomer) {
  ServerOptions options;
  options.max_connections = 2;
  Start(options);
  RawClient a = From("127.0.0.2");
  ASSERT_EQ(Get(a, "/whoami"), 200);
  std::this_thread::sleep_for(20ms);  // a has waited longer than b
  RawClient b = From("127.0.0.3");
  ASSERT_EQ(Get(b, "/whoami"), 200);
  // Both only hold their connection open now: the newcomer takes a's place.
  RawClient c = From("127.0.0.4");
  EXPECT_EQ(Get(c, "/whoami"), 200);
  EXPECT_TRUE(a.WaitClosed()) << "the longest idle connection makes room";
  EXPECT_EQ(Get(b, "/whoami"), 200) << "the other one keeps its place";
  ConnectionStats stats = server_->connection_stats();
  EXPECT_EQ(stats.reclaimed_idle, 1u);
  EXPECT_EQ(stats.rejected_listener_full, 0u);
}

TEST_F(LimitsTest, AListenerFullOfRequestsInProgressRefusesWithA503) {
  ServerOptions options;
  options.max_connections = 2;
  Start(options);
  // Two clients in the middle of sending a request: neither is idle, so neither is closed.
  RawClient a = From("127.0.0.2");
  RawClient b = From("127.0.0.3");
  ASSERT_TRUE(a.Send("GET /whoami HTTP/1.1\r\nHost: t\r\n").ok());
  ASSERT_TRUE(b.Send("GET /whoami HTTP/1.1\r\nHost: t\r\n").ok());
  ASSERT_TRUE(Eventually([&] { return server_->connection_stats().open == 2; }));
  std::this_thread::sleep_for(50ms);  // both heads' first bytes are read
  RawClient c = From("127.0.0.4");
  auto refused = c.ReadResponse(5s);
  ASSERT_TRUE(refused.ok()) << refused.status();
  EXPECT_EQ(refused->status, 503);
  EXPECT_NE(refused->body.find("too many open connections (limit 2)"), std::string::npos)
      << refused->body;
  EXPECT_EQ(server_->connection_stats().rejected_listener_full, 1u);
  EXPECT_EQ(server_->connection_stats().reclaimed_idle, 0u);
  // The requests in progress finish undisturbed.
  ASSERT_TRUE(a.Send("\r\n").ok());
  auto answered = a.ReadResponse(5s);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->status, 200);
  b.Close();
  EXPECT_TRUE(Eventually([&] { return server_->connection_stats().open == 1; }));
  RawClient d = From("127.0.0.4");
  EXPECT_EQ(Get(d, "/whoami"), 200);
}

TEST_F(LimitsTest, TheDefaultListenerCapIsAQuarterOfTheOpenFileLimit) {
  Start();
  rlimit nofile{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
  EXPECT_EQ(server_->connection_stats().max_connections, std::max<size_t>(16, nofile.rlim_cur / 4));
  EXPECT_EQ(server_->connection_stats().max_connections_per_address, 0u);
}

TEST_F(LimitsTest, AConnectionThatSendsNothingIsClosedAtTheHeadTimeout) {
  ServerOptions options;
  options.header_timeout = 1s;
  Start(options);
  RawClient silent = From("127.0.0.2");
  EXPECT_TRUE(silent.WaitClosed(10s));
  EXPECT_TRUE(silent.received().empty());
  EXPECT_EQ(server_->connection_stats().timed_out_head, 1u);
}

TEST_F(LimitsTest, AHeadSentOneByteAtATimeIsCutAtTheHeadTimeoutThoughBytesKeepComing) {
  ServerOptions options;
  options.header_timeout = 1s;
  Start(options);
  RawClient slow = From("127.0.0.2");
  ASSERT_TRUE(slow.Send("GET /whoami HTTP/1.1\r\nHost: t\r\nX-Slow: ").ok());
  // A byte every 100 ms would keep a per-read timeout from ever firing; the head's deadline is
  // counted from its first byte.
  bool cut = false;
  for (int i = 0; i < 100 && !cut; ++i) {
    if (!slow.Send("a").ok()) break;
    cut = slow.WaitClosed(100ms);
  }
  EXPECT_TRUE(cut || slow.WaitClosed(1s));
  EXPECT_EQ(slow.received().find("200"), std::string::npos);
  EXPECT_EQ(server_->connection_stats().timed_out_head, 1u);
}

TEST_F(LimitsTest, ABodySentOneByteAtATimeIsCutAtTheBodyTimeout) {
  ServerOptions options;
  options.body_timeout = 1s;
  Start(options);
  RawClient slow = From("127.0.0.2");
  ASSERT_TRUE(slow.Send("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 1000\r\n\r\n").ok());
  bool cut = false;
  for (int i = 0; i < 100 && !cut; ++i) {
    if (!slow.Send("b").ok()) break;
    cut = slow.WaitClosed(100ms);
  }
  EXPECT_TRUE(cut || slow.WaitClosed(1s));
  EXPECT_EQ(server_->connection_stats().timed_out_body, 1u);
}

TEST_F(LimitsTest, AClientThatNeverReadsItsResponseIsCutAtTheWriteTimeout) {
  ServerOptions options;
  options.write_timeout = 1s;
  Start(options);
  RawClient deaf = From("127.0.0.2");
  ASSERT_TRUE(deaf.Send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n").ok());
  // Nothing is read: the response fills the socket buffers and the write stalls.
  EXPECT_TRUE(Eventually([&] { return server_->connection_stats().timed_out_write == 1; }));
  EXPECT_TRUE(Eventually([&] { return server_->connection_stats().open == 0; }));
}

TEST_F(LimitsTest, OneKeysFloodOfBlockingRequestsLeavesThreadsForAnotherKey) {
  ServerOptions options;
  options.blocking_threads = 4;
  options.blocking_threads_per_key = 3;
  Start(options);
  // Ten requests of key A block in their handler; the pool has four threads.
  std::vector<RawClient> flood;
  for (int i = 0; i < 10; ++i) {
    flood.push_back(From("127.0.0.2"));
    ASSERT_TRUE(flood.back().Send("GET /hold HTTP/1.1\r\nHost: t\r\nX-API-Key: A\r\n\r\n").ok());
  }
  ASSERT_TRUE(Eventually([&] { return held_.load() == 3; }));
  // The other seven queue as the server reads them (the sends above return before it has).
  EXPECT_TRUE(Eventually([&] { return server_->connection_stats().blocking_queued == 7u; }))
      << server_->connection_stats().blocking_queued;
  // Key B, from the same address, is served while every one of A's requests still holds.
  RawClient b = From("127.0.0.2");
  EXPECT_EQ(Get(b, "/quick", "X-API-Key: B\r\n"), 200);
  RawClient bearer = From("127.0.0.2");
  EXPECT_EQ(Get(bearer, "/quick", "Authorization: Bearer C\r\n"), 200);
  EXPECT_EQ(held_.load(), 3);
  // Key A's next request queues behind its own flood.
  RawClient a = From("127.0.0.2");
  ASSERT_TRUE(a.Send("GET /quick HTTP/1.1\r\nHost: t\r\nX-API-Key: A\r\n\r\n").ok());
  EXPECT_FALSE(a.ReadResponse(200ms).ok());
  release_.Notify();
  for (auto& c : flood) {
    auto resp = c.ReadResponse(10s);
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->status, 200);
  }
  auto resp = a.ReadResponse(10s);
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->body, "quick");
}

TEST_F(LimitsTest, ARouteNamesItsOwnFairnessKey) {
  ServerOptions options;
  options.blocking_threads = 2;
  options.blocking_threads_per_key = 1;
  Start(options);
  // The same API key, but two tenants by the route's own key.
  std::vector<RawClient> flood;
  for (int i = 0; i < 5; ++i) {
    flood.push_back(From("127.0.0.2"));
    ASSERT_TRUE(flood.back()
                    .Send("GET /tenant/hold HTTP/1.1\r\nHost: t\r\nX-API-Key: K\r\n"
                          "X-Tenant: one\r\n\r\n")
                    .ok());
  }
  ASSERT_TRUE(Eventually([&] { return held_.load() == 1; }));
  RawClient other = From("127.0.0.2");
  EXPECT_EQ(Get(other, "/tenant/quick", "X-API-Key: K\r\nX-Tenant: two\r\n"), 200);
  EXPECT_EQ(held_.load(), 1);
}

}  // namespace
}  // namespace warren::net
