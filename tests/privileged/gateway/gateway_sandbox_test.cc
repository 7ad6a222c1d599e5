// The gateway relaying into real sandboxes: sockets made inside each sandbox's network
// namespace (RuntimeDialer over NativeRuntime), busybox servers inside, routes set directly and
// through a real store watch of Sandbox objects in a temp SQLite store.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/ids.h"
#include "gateway/gateway.h"
#include "gateway/route_sync.h"
#include "gateway/runtime_dialer.h"
#include "net/http_client.h"
#include "net/testing/raw_client.h"
#include "sandbox_servers.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;
using net::testing::RawClient;
using testing::kClosedPort;
using testing::kEnvdLikePort;
using testing::kGoPort;
using testing::kHttpdPort;
using testing::kStreamPort;
using testing::kUpgradePort;

std::string NotFoundBody(const std::string& id) {
  return R"({"sandboxId":")" + id + R"(","message":"The sandbox was not found","code":502})";
}

class GatewaySandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root (sandboxes)";
    auto servers = testing::SandboxServers::Create();
    ASSERT_TRUE(servers.ok()) << servers.status();
    servers_ = std::move(*servers);
    dialer_ = std::make_unique<RuntimeDialer>(servers_->runtime());
    GatewayOptions options;
    options.server.port = 0;
    options.server.loop_threads = 2;
    options.domain = "sbx.test";
    auto gateway = Gateway::Start(options, table_, *dialer_);
    ASSERT_TRUE(gateway.ok()) << gateway.status();
    gateway_ = std::move(*gateway);
  }

  void TearDown() override {
    if (gateway_) gateway_->Shutdown(0ms);
    gateway_.reset();
    servers_.reset();
  }

  std::string StartSandbox(const std::string& token = "") {
    auto id = servers_->Start();
    EXPECT_TRUE(id.ok()) << id.status();
    if (!id.ok()) return "";
    Route route;
    route.sandbox_id = *id;
    route.namespace_ = "default";
    route.name = *id;
    route.uid = "uid-" + *id;
    route.state = RouteState::kRunning;
    route.access_token = token;
    route.resource_version = ++rv_;
    EXPECT_EQ(table_.Upsert(route), UpdateResult::kApplied);
    return *id;
  }

  void SetState(const std::string& id, RouteState state) {
    auto current = table_.Lookup(id);
    ASSERT_TRUE(current);
    Route route = *current->route;
    route.state = state;
    route.resource_version = ++rv_;
    ASSERT_EQ(table_.Upsert(route), UpdateResult::kApplied);
  }

  net::Response Get(const std::string& target, net::Headers headers) {
    auto client = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(gateway_->port()));
    EXPECT_TRUE(client.ok());
    auto resp = (*client)->Do({.target = target, .headers = std::move(headers)});
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : net::Response{};
  }
  static net::Headers To(const std::string& id, uint16_t port, const std::string& token = "") {
    net::Headers h;
    h.Set("E2b-Sandbox-Id", id);
    h.Set("E2b-Sandbox-Port", std::to_string(port));
    if (!token.empty()) h.Set("X-Access-Token", token);
    return h;
  }
  RawClient Connect() {
    auto c = RawClient::Connect(gateway_->port());
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  int64_t rv_ = 0;
  RouteTable table_;
  std::unique_ptr<testing::SandboxServers> servers_;
  std::unique_ptr<RuntimeDialer> dialer_;
  std::unique_ptr<Gateway> gateway_;
};

TEST_F(GatewaySandboxTest, HeaderAndHostRoutingReachTheRightSandbox) {
  std::string a = StartSandbox();
  std::string b = StartSandbox();
  ASSERT_FALSE(a.empty() || b.empty());
  EXPECT_EQ(Get("/id.txt", To(a, kHttpdPort)).body, a + "\n");
  EXPECT_EQ(Get("/id.txt", To(b, kHttpdPort)).body, b + "\n");
  net::Headers host;
  host.Set("Host", fmt::format("{}-{}.sbx.test:7781", kHttpdPort, b));
  net::Response by_host = Get("/id.txt", host);
  EXPECT_EQ(by_host.status, 200);
  EXPECT_EQ(by_host.body, b + "\n");
  // No port header: envd's port (here an httpd standing in for envd).
  net::Headers envd;
  envd.Set("E2b-Sandbox-Id", a);
  EXPECT_EQ(Get("/id.txt", envd).body, a + "\n");
  EXPECT_GE(gateway_->counters().upstream_dialed.load(), 4u);
}

TEST_F(GatewaySandboxTest, AChunkedStreamIsRelayedIncrementally) {
  std::string id = StartSandbox();
  ASSERT_FALSE(id.empty());
  RawClient c = Connect();
  ASSERT_TRUE(c.Send(fmt::format("GET /finite HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {}\r\n"
                                 "E2b-Sandbox-Port: {}\r\n\r\n",
                                 id, kStreamPort))
                  .ok());
  // The server sends "tick 2" only after /tmp/go exists, which only the next request creates:
  // seeing "tick 1" now means the gateway did not hold the stream back.
  ASSERT_TRUE(c.ReadUntil("tick 1\n").ok()) << c.received();
  EXPECT_NE(c.received().find("Transfer-Encoding: chunked"), std::string::npos) << c.received();
  EXPECT_EQ(c.received().find("tick 2"), std::string::npos);
  EXPECT_EQ(Get("/go", To(id, kGoPort)).body, "go");
  ASSERT_TRUE(c.ReadUntil("\r\n0\r\n\r\n").ok()) << c.received();
  EXPECT_NE(c.received().find("tick 2\n"), std::string::npos);
  // The client connection is still usable after the stream ended.
  c.received().clear();
  ASSERT_TRUE(c.Send(fmt::format("GET /id.txt HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {}\r\n"
                                 "E2b-Sandbox-Port: {}\r\n\r\n",
                                 id, kHttpdPort))
                  .ok());
  auto next = c.ReadResponse();
  ASSERT_TRUE(next.ok()) << next.status();
  EXPECT_EQ(next->body, id + "\n");
}

TEST_F(GatewaySandboxTest, AnUpgradedConnectionCarriesBytesBothWays) {
  std::string id = StartSandbox();
  ASSERT_FALSE(id.empty());
  RawClient c = Connect();
  ASSERT_TRUE(c.Send(fmt::format("GET /ws HTTP/1.1\r\nHost: {}-{}.sbx.test\r\n"
                                 "Connection: Upgrade\r\nUpgrade: echo\r\n\r\n",
                                 kUpgradePort, id))
                  .ok());
  ASSERT_TRUE(c.ReadUntil("\r\n\r\n").ok()) << c.received();
  EXPECT_EQ(c.received().rfind("HTTP/1.1 101 Switching Protocols\r\n", 0), 0u) << c.received();
  EXPECT_NE(c.received().find("Upgrade: echo"), std::string::npos);
  for (std::string word : {"hello", "second line"}) {
    c.received().clear();
    ASSERT_TRUE(c.Send(word + "\n").ok());
    ASSERT_TRUE(c.ReadUntil("echo: " + word + "\n").ok()) << c.received();
  }
  // Our half-close reaches the server, whose exit closes the tunnel.
  c.ShutdownWrite();
  EXPECT_TRUE(c.WaitClosed());
}

TEST_F(GatewaySandboxTest, Each502BodyIsExact) {
  std::string id = StartSandbox();
  ASSERT_FALSE(id.empty());
  std::string never = base::NewSandboxId();
  net::Response unknown = Get("/health", To(never, kEnvdLikePort));
  EXPECT_EQ(unknown.status, 502);
  EXPECT_EQ(unknown.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(unknown.body, NotFoundBody(never));

  net::Response closed = Get("/", To(id, kClosedPort));
  EXPECT_EQ(closed.status, 502);
  EXPECT_EQ(closed.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(closed.body, R"({"sandboxId":")" + id +
                             R"(","message":"The sandbox is running but port is not open",)"
                             R"("port":9999,"code":502})");

  // Paused (frozen for real): not found, as E2B's proxy says without auto-resume.
  ASSERT_TRUE(servers_->runtime().Pause(id).ok());
  SetState(id, RouteState::kPaused);
  net::Response paused = Get("/id.txt", To(id, kHttpdPort));
  EXPECT_EQ(paused.status, 502);
  EXPECT_EQ(paused.body, NotFoundBody(id));
  ASSERT_TRUE(servers_->runtime().Resume(id).ok());
  SetState(id, RouteState::kRunning);
  EXPECT_EQ(Get("/id.txt", To(id, kHttpdPort)).body, id + "\n");

  // Killed while the route still says running (the watch has not caught up): the dial finds no
  // sandbox, and the answer is the same not-found body.
  ASSERT_TRUE(servers_->runtime().Destroy(id).ok());
  net::Response killed = Get("/id.txt", To(id, kHttpdPort));
  EXPECT_EQ(killed.status, 502);
  EXPECT_EQ(killed.body, NotFoundBody(id));
  // And once the route is removed.
  table_.Remove(id, ++rv_);
  EXPECT_EQ(Get("/health", To(id, kEnvdLikePort)).body, NotFoundBody(id));
}

TEST_F(GatewaySandboxTest, EnvdPortNeedsTheAccessToken) {
  std::string id = StartSandbox("tok-123");
  ASSERT_FALSE(id.empty());
  const std::string kUnauthorized =
      R"({"code":401,"message":"unauthorized access, please provide a valid access token or )"
      R"(method signing if supported"})";
  net::Response wrong = Get("/id.txt", To(id, kEnvdLikePort, "tok-124"));
  EXPECT_EQ(wrong.status, 401);
  EXPECT_EQ(wrong.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(wrong.body, kUnauthorized);
  EXPECT_EQ(Get("/id.txt", To(id, kEnvdLikePort)).body, kUnauthorized);
  net::Response right = Get("/id.txt", To(id, kEnvdLikePort, "tok-123"));
  EXPECT_EQ(right.status, 200);
  EXPECT_EQ(right.body, id + "\n");
  // envd decides these itself; other ports are public.
  EXPECT_EQ(Get("/health", To(id, kEnvdLikePort)).body, "ok\n");
  EXPECT_NE(Get("/files?path=x&signature=v1_abc", To(id, kEnvdLikePort)).status, 401);
  EXPECT_EQ(Get("/id.txt", To(id, kHttpdPort)).body, id + "\n");
}

TEST_F(GatewaySandboxTest, RemovingTheRouteCutsAnOpenStreamAndThenAnswers502) {
  std::string id = StartSandbox();
  std::string other = StartSandbox();
  ASSERT_FALSE(id.empty() || other.empty());
  auto open_stream = [&](const std::string& sandbox) {
    RawClient c = Connect();
    EXPECT_TRUE(c.Send(fmt::format("GET /forever HTTP/1.1\r\nHost: x\r\nE2b-Sandbox-Id: {}\r\n"
                                   "E2b-Sandbox-Port: {}\r\n\r\n",
                                   sandbox, kStreamPort))
                    .ok());
    EXPECT_TRUE(c.ReadUntil("tick\n").ok()) << c.received();
    return c;
  };
  RawClient victim = open_stream(id);
  RawClient bystander = open_stream(other);
  EXPECT_EQ(table_.Stats().open_relays, 2u);

  // The kill path: the route goes, then the sandbox.
  ASSERT_TRUE(table_.Remove(id, ++rv_));
  ASSERT_TRUE(victim.WaitClosed()) << "the stream outlived the route";
  EXPECT_EQ(victim.received().find("\r\n0\r\n\r\n"), std::string::npos)
      << "the stream ended cleanly; the SDK must see it cut";
  ASSERT_TRUE(servers_->runtime().Destroy(id).ok());
  // The SDK's probe after a cut stream: 502, so it reports the sandbox as killed.
  net::Response probe = Get("/health", To(id, kEnvdLikePort));
  EXPECT_EQ(probe.status, 502);
  EXPECT_EQ(probe.body, NotFoundBody(id));

  // The other sandbox's stream is untouched.
  bystander.received().clear();
  EXPECT_TRUE(bystander.ReadUntil("tick\n").ok());
  // Pausing cuts streams too.
  SetState(other, RouteState::kPaused);
  EXPECT_TRUE(bystander.WaitClosed());
}

TEST_F(GatewaySandboxTest, RoutesFromAStoreWatchAndAStaleEventCannotResurrectAKill) {
  std::string id = servers_->Start().value_or("");
  ASSERT_FALSE(id.empty());
  store::testing::TempStore store;
  // A lagging watcher: every event from the start, read only after the kill.
  auto lagging =
      store->Watch(&api::SandboxKind(), store::WatchOptions{.resource_version = int64_t{0}});
  ASSERT_TRUE(lagging.ok()) << lagging.status();
  api::Object sandbox = store::testing::MakeSandbox("agent-1", {{api::labels::kSandboxId, id}});
  const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  secrets.SetAccessToken(sandbox, "tok-watch");
  sandbox = store->Create(sandbox).value();
  auto sync = RouteSync::Start(store.store(), secrets, table_);
  ASSERT_TRUE(sync.ok()) << sync.status();
  // Pending: not routable yet.
  EXPECT_EQ(Get("/id.txt", To(id, kHttpdPort)).body, NotFoundBody(id));
  sandbox.status()["phase"] = "Running";
  sandbox = store->UpdateStatus(sandbox).value();
  net::Response routed;
  for (int i = 0; i < 500; ++i) {
    routed = Get("/id.txt", To(id, kEnvdLikePort, "tok-watch"));
    if (routed.status == 200) break;
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(routed.status, 200) << routed.body;
  EXPECT_EQ(routed.body, id + "\n");
  EXPECT_EQ(Get("/id.txt", To(id, kEnvdLikePort, "other")).status, 401) << "token from the object";

  // Kill: delete the object, tell the table directly (the deletion's revision), destroy.
  api::Object deleted = store->Delete(api::SandboxKind(), "default", "agent-1").value();
  table_.Remove(id, deleted.metadata.resource_version, deleted.metadata.uid);
  ASSERT_TRUE(servers_->runtime().Destroy(id).ok());
  // The lagging watch now delivers its events, including "Running", after the kill.
  int replayed = 0;
  for (;;) {
    auto next = (*lagging)->Next(2s);
    ASSERT_TRUE(next.ok()) << next.status();
    if (!next->has_value()) break;
    ApplySandboxEvent(table_, **next, secrets);
    ++replayed;
  }
  EXPECT_EQ(replayed, 3);  // ADDED (Pending), MODIFIED (Running), DELETED
  EXPECT_FALSE(table_.Lookup(id)) << "a stale event resurrected the route";
  EXPECT_EQ(Get("/id.txt", To(id, kEnvdLikePort, "tok-watch")).body, NotFoundBody(id));
  (*sync)->Stop();
}

TEST_F(GatewaySandboxTest, BadHostAndPortHeadersAre400) {
  std::string id = StartSandbox();
  ASSERT_FALSE(id.empty());
  net::Headers bad_port;
  bad_port.Set("E2b-Sandbox-Id", id);
  bad_port.Set("E2b-Sandbox-Port", "http");
  net::Response a = Get("/", bad_port);
  EXPECT_EQ(a.status, 400);
  EXPECT_EQ(a.headers.Get("Content-Type"), "application/json");
  EXPECT_EQ(
      a.body,
      R"j({"code":400,"message":"E2b-Sandbox-Port header \"http\" is not a port number (1-65535)"})j");
  net::Headers wrong_domain;
  wrong_domain.Set("Host", fmt::format("{}-{}.elsewhere.test", kHttpdPort, id));
  net::Response b = Get("/id.txt", wrong_domain);
  EXPECT_EQ(b.status, 400);
  EXPECT_NE(b.body.find("with domain sbx.test"), std::string::npos) << b.body;
  net::Headers nothing;
  nothing.Set("Host", "127.0.0.1:7781");
  net::Response c = Get("/", nothing);
  EXPECT_EQ(c.status, 400);
  EXPECT_NE(c.body.find("E2b-Sandbox-Id"), std::string::npos) << c.body;
  // A bad request costs nothing: the sandbox still answers.
  EXPECT_EQ(Get("/id.txt", To(id, kHttpdPort)).body, id + "\n");
}

}  // namespace
}  // namespace warren::gateway
