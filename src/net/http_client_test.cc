#include "net/http_client.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "net/dial.h"
#include "net/http_server.h"
#include "net/testing/notification.h"
#include "net/testing/raw_client.h"

namespace warren::net {
namespace {

using testing::Notification;
using testing::RawClient;
using testing::RawListener;
using namespace std::chrono_literals;

Router WhoAmIRouter() {
  Router router;
  router.Add("GET", "/whoami",
             [](Request&& req, Responder r) { r.Send(Response::Text(200, req.remote)); });
  router.Add("POST", "/whoami",
             [](Request&& req, Responder r) { r.Send(Response::Text(200, req.remote)); });
  router.Add("GET", "/host", [](Request&& req, Responder r) {
    r.Send(Response::Text(200, std::string(req.headers.Get("Host").value_or(""))));
  });
  return router;
}

std::unique_ptr<HttpServer> StartServer(Router router, uint16_t port = 0) {
  ServerOptions options;
  options.port = port;
  options.loop_threads = 2;
  auto server = HttpServer::Start(options, std::move(router));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(*server) : nullptr;
}

std::unique_ptr<HttpClient> ClientFor(uint16_t port) {
  auto client = HttpClient::ForAddress("http://127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(client.ok()) << client.status();
  return std::move(*client);
}

TEST(HttpClientTest, PoolReusesOneConnectionForSequentialCalls) {
  auto server = StartServer(WhoAmIRouter());
  auto client = ClientFor(server->port());
  std::string first;
  for (int i = 0; i < 5; ++i) {
    auto resp = client->Do({.target = "/whoami"});
    ASSERT_TRUE(resp.ok()) << resp.status();
    if (i == 0) first = resp->body;
    EXPECT_EQ(resp->body, first) << "request " << i << " used a new connection";
  }
  client->CloseIdle();
  auto resp = client->Do({.target = "/whoami"});
  ASSERT_TRUE(resp.ok());
  EXPECT_NE(resp->body, first);
}

TEST(HttpClientTest, ConcurrentCallsUseSeparateConnections) {
  constexpr int kCallers = 4;
  std::mutex mu;
  std::condition_variable cv;
  int arrived = 0;
  Router router;
  router.Add(
      "GET", "/meet",
      [&](Request&& req, Responder r) {
        // Nobody answers until all callers are in: only separate connections get here.
        std::unique_lock lock(mu);
        ++arrived;
        cv.notify_all();
        bool all = cv.wait_for(lock, 10s, [&] { return arrived == kCallers; });
        r.Send(Response::Text(all ? 200 : 504, req.remote));
      },
      RouteOptions{.blocking = true});
  auto server = StartServer(std::move(router));
  auto client = ClientFor(server->port());
  std::vector<std::thread> threads;
  std::vector<std::string> remotes(kCallers);
  for (int i = 0; i < kCallers; ++i) {
    threads.emplace_back([&, i] {
      auto resp = client->Do({.target = "/meet", .timeout = 20s});
      ASSERT_TRUE(resp.ok()) << resp.status();
      EXPECT_EQ(resp->status, 200);
      remotes[i] = resp->body;
    });
  }
  for (auto& t : threads) t.join();
  std::sort(remotes.begin(), remotes.end());
  EXPECT_EQ(std::unique(remotes.begin(), remotes.end()), remotes.end());
}

TEST(HttpClientTest, RecoversAfterTheServerRestarts) {
  auto server = StartServer(WhoAmIRouter());
  uint16_t port = server->port();
  auto client = ClientFor(port);
  ASSERT_TRUE(client->Do({.target = "/whoami"}).ok());
  server.reset();  // the pooled connection is now dead
  auto down = client->Do({.target = "/whoami", .timeout = 2s});
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable) << down.status();
  server = StartServer(WhoAmIRouter(), port);
  ASSERT_NE(server, nullptr);
  auto get = client->Do({.target = "/whoami"});
  ASSERT_TRUE(get.ok()) << get.status();
  EXPECT_EQ(get->status, 200);
  // And once more after a restart with a connection pooled: even a POST goes through, because
  // the dead connection is noticed before anything is sent on it.
  server.reset();
  server = StartServer(WhoAmIRouter(), port);
  ASSERT_NE(server, nullptr);
  auto post = client->Do({.method = "POST", .target = "/whoami", .body = "x"});
  ASSERT_TRUE(post.ok()) << post.status();
  EXPECT_EQ(post->status, 200);
}

// A server that answers the first request on each connection and then drops the connection
// when the second arrives, without answering: a pooled connection that dies after the request
// was sent.
class DropSecondRequestServer {
 public:
  DropSecondRequestServer() {
    auto l = RawListener::Listen();
    EXPECT_TRUE(l.ok());
    listener_.emplace(std::move(*l));
    thread_ = std::thread([this] { Serve(); });
  }
  ~DropSecondRequestServer() {
    stop_ = true;
    thread_.join();
  }
  uint16_t port() const { return listener_->port(); }
  int requests_seen() const { return seen_.load(); }

 private:
  void Serve() {
    std::vector<std::unique_ptr<RawClient>> conns;
    std::vector<std::thread> helpers;
    int n = 0;
    while (!stop_) {
      auto c = listener_->Accept(100ms);
      if (!c.ok()) continue;
      conns.push_back(std::make_unique<RawClient>(std::move(*c)));
      RawClient* conn = conns.back().get();
      int id = ++n;
      helpers.emplace_back([conn, id, this] {
        if (!conn->ReadUntil("\r\n\r\n").ok()) return;
        ++seen_;
        conn->received().clear();
        std::string body = "conn" + std::to_string(id);
        (void)conn->Send("HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(body.size()) +
                         "\r\n\r\n" + body);
        if (!conn->ReadUntil("\r\n\r\n").ok()) return;
        ++seen_;
        conn->Close();
      });
    }
    for (auto& t : helpers) t.join();
  }

  std::optional<RawListener> listener_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<int> seen_{0};
};

TEST(HttpClientTest, RetriesOnlyIdempotentRequestsOnADeadPooledConnection) {
  DropSecondRequestServer server;
  auto client = ClientFor(server.port());
  auto a = client->Do({.target = "/a"});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->body, "conn1");
  // Sent on the pooled connection, dropped unanswered, retried once on a fresh one.
  auto b = client->Do({.target = "/b"});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->body, "conn2");
  EXPECT_EQ(server.requests_seen(), 3);
  // A POST that reached the server is never sent twice.
  auto c = client->Do({.method = "POST", .target = "/c", .body = "once"});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kUnavailable) << c.status();
  EXPECT_EQ(server.requests_seen(), 4);
}

TEST(HttpClientTest, TimeoutsAndUnreachableEndpoints) {
  Notification release;
  Router router;
  router.Add(
      "GET", "/stall",
      [&](Request&&, Responder r) {
        release.WaitFor(10s);
        r.Send(Response::Empty(204));
      },
      RouteOptions{.blocking = true});
  router.Add(
      "GET", "/slow-stream",
      [](Request&&, Responder r) {
        auto s = r.Stream(200, {});
        std::this_thread::sleep_for(400ms);  // longer than the request timeout, after the head
        s->Write("late but fine");
        s->Finish();
      },
      RouteOptions{.blocking = true});
  auto server = StartServer(std::move(router));
  auto client = ClientFor(server->port());
  auto resp = client->Do({.target = "/stall", .timeout = 300ms});
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kDeadlineExceeded) << resp.status();
  release.Notify();

  std::string data;
  auto streamed = client->DoStreaming({.target = "/slow-stream", .timeout = 200ms}, nullptr,
                                      [&](std::string_view d) {
                                        data.append(d);
                                        return true;
                                      });
  ASSERT_TRUE(streamed.ok()) << streamed.status();
  EXPECT_EQ(data, "late but fine");

  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  uint16_t closed_port = listener->port();
  listener = RawListener::Listen();  // the first one is gone: nothing listens on closed_port
  auto nowhere = ClientFor(closed_port);
  auto refused = nowhere->Do({.target = "/", .timeout = 2s});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable) << refused.status();
}

TEST(HttpClientTest, CustomDialerAndHostHeader) {
  auto server = StartServer(WhoAmIRouter());
  uint16_t port = server->port();
  std::atomic<int> dials{0};
  auto client = HttpClient::WithDialer(
      [&](std::chrono::milliseconds timeout) {
        ++dials;
        return DialTcp("127.0.0.1", port, timeout);
      },
      "sandbox-49983.warren");
  for (int i = 0; i < 3; ++i) {
    auto resp = client->Do({.target = "/host"});
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->body, "sandbox-49983.warren");
  }
  EXPECT_EQ(dials.load(), 1);
  auto failing = HttpClient::WithDialer(
      [](std::chrono::milliseconds) -> Result<base::UniqueFd> {
        return UnavailableError("sandbox is paused");
      },
      "x");
  auto resp = failing->Do({.target = "/"});
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("sandbox is paused"), std::string::npos);
}

TEST(HttpClientTest, StreamingStopsEarlyAndLimitsApply) {
  Router router;
  router.Add(
      "GET", "/ticks",
      [](Request&&, Responder r) {
        auto s = r.Stream(200, {});
        for (int i = 0; i < 1000 && s->Write("tick\n"); ++i) {
          std::this_thread::sleep_for(2ms);
        }
        s->Finish();
      },
      RouteOptions{.blocking = true});
  router.Add("GET", "/big",
             [](Request&&, Responder r) { r.Send(Response::Text(200, std::string(100000, 'b'))); });
  auto server = StartServer(std::move(router));
  auto client = ClientFor(server->port());
  int pieces = 0;
  auto resp = client->DoStreaming({.target = "/ticks"}, nullptr,
                                  [&](std::string_view) { return ++pieces < 3; });
  ASSERT_TRUE(resp.ok()) << resp.status();
  EXPECT_EQ(resp->status, 200);
  EXPECT_EQ(pieces, 3);
  bool head_seen = false;
  resp = client->DoStreaming(
      {.target = "/big"},
      [&](const Response& head) {
        head_seen = head.status == 200;
        return false;  // not interested after all
      },
      [](std::string_view) { return true; });
  ASSERT_TRUE(resp.ok());
  EXPECT_TRUE(head_seen);
  auto big = client->Do({.target = "/big", .max_response_bytes = 1000});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted) << big.status();
  big = client->Do({.target = "/big"});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->body.size(), 100000u);
}

TEST(HttpClientTest, MalformedResponsesAreInvalidArgument) {
  auto listener = RawListener::Listen();
  ASSERT_TRUE(listener.ok());
  std::thread server([&] {
    for (const char* reply : {"HTTP/1.1 abc OK\r\n\r\n",
                              "HTTP/1.1 200 OK\r\nContent-Length: 5"
                              "\r\nContent-Length: 6\r\n\r\nhello!"}) {
      auto conn = listener->Accept();
      if (!conn.ok()) return;
      (void)conn->ReadUntil("\r\n\r\n");
      (void)conn->Send(reply);
      conn->WaitClosed(5s);
    }
  });
  auto client = ClientFor(listener->port());
  for (int i = 0; i < 2; ++i) {
    auto resp = client->Do({.target = "/"});
    ASSERT_FALSE(resp.ok());
    EXPECT_EQ(resp.status().code(), StatusCode::kInvalidArgument) << resp.status();
    client->CloseIdle();
  }
  server.join();
}

}  // namespace
}  // namespace warren::net
