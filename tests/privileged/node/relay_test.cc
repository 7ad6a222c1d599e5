// The node relay (node/relay_routes.h) in front of a real agent and sandbox, reached with the
// servers' RelayClient: what a `warren server --node off` does for every sandbox of a
// `warren node`.

#include <gtest/gtest.h>

#include <thread>

#include "base/testing/status_macros.h"
#include "net/http_server.h"
#include "node/relay_client.h"
#include "node/relay_routes.h"
#include "node_fixture.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kToken = "the-clusters-relay-credential";

class RelayTest : public NodeTest {
 protected:
  void StartRelay() {
    net::Router router;
    AddRelayRoutes(router, *agent_, kToken);
    auto server = net::HttpServer::Start({.loop_threads = 1}, std::move(router));
    ASSERT_TRUE(server.ok()) << server.status();
    relay_server_ = std::move(*server);
  }
  void TearDown() override {
    relay_server_.reset();
    NodeTest::TearDown();
  }
  std::unique_ptr<RelayClient> Client(const std::string& token = kToken) {
    auto c = RelayClient::Create("127.0.0.1:" + std::to_string(relay_server_->port()), token);
    EXPECT_TRUE(c.ok()) << c.status();
    return std::move(*c);
  }

  std::unique_ptr<net::HttpServer> relay_server_;
};

TEST_F(RelayTest, ServersReachASandboxOnlyWithTheCredentialAndSeeTheNodesOwnErrors) {
  StartAgent();
  StartRelay();
  api::Object created = Apply(
      SandboxYaml("relayed", "base",
                  R"(["/bin/sh", "-c", "echo relayed-line; echo oops >&2; exec sleep 3600"])"));
  const std::string id = SandboxId(created);
  WaitPhase("relayed", "Running");
  auto relay = Client();

  // envd through the tunnel, as the gateway of another process reaches it.
  auto fd = relay->Dial(id, 49983, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string resp = RawHttp(fd->get(), "GET /health HTTP/1.0\r\nHost: envd\r\n\r\n");
  EXPECT_NE(resp.find("HTTP/1.1 204"), std::string::npos) << resp;

  // The node's answers, unchanged: nothing listens; no such sandbox; a wrong credential.
  auto closed = relay->Dial(id, 4321, 5s);
  EXPECT_EQ(closed.status().code(), StatusCode::kUnavailable) << closed.status();
  auto unknown = relay->Dial("no-such-sandbox", 49983, 5s);
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound) << unknown.status();
  auto stranger = Client("a-tenant-api-key")->Dial(id, 49983, 5s);
  // Refused, and said as the cluster's fault (Internal), not the API caller's key.
  EXPECT_EQ(stranger.status().code(), StatusCode::kInternal) << stranger.status();
  EXPECT_NE(stranger.status().message().find("credential"), std::string::npos);
  EXPECT_EQ(Client("")->Init(id, "{}", 5s).code(), StatusCode::kInternal);

  // envd /init, the command's log (stderr told apart), the stats ring.
  ASSERT_OK(relay->Init(id, R"({"envVars":{"RELAYED":"1"}})", 5s));
  std::vector<base::LogLine> lines;
  for (int i = 0; i < 100 && lines.size() < 2; ++i) {
    auto got = relay->CommandLog(id, {});
    ASSERT_TRUE(got.ok()) << got.status();
    lines = std::move(*got);
    if (lines.size() < 2) std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].text, "relayed-line");
  base::LogLineQuery errors_only;
  errors_only.stderr_only = true;
  auto errs = relay->CommandLog(id, errors_only);
  ASSERT_TRUE(errs.ok()) << errs.status();
  ASSERT_EQ(errs->size(), 1u);
  EXPECT_EQ((*errs)[0].text, "oops");
  std::vector<StatsSample> stats;
  for (int i = 0; i < 100 && stats.empty(); ++i) {
    auto got = relay->Metrics(id);
    ASSERT_TRUE(got.ok()) << got.status();
    stats = std::move(*got);
    if (stats.empty()) std::this_thread::sleep_for(50ms);
  }
  ASSERT_FALSE(stats.empty());
  EXPECT_GT(stats.back().memory_limit_bytes, 0u);
  auto headers = relay->EnvdAuthHeaders(id);
  ASSERT_TRUE(headers.ok()) << headers.status();

  // Paused: the dial is refused as the local agent refuses it.
  Patch("relayed", R"({"spec":{"paused":true}})");
  WaitPhase("relayed", "Paused");
  auto paused = relay->Dial(id, 49983, 5s);
  EXPECT_EQ(paused.status().code(), StatusCode::kFailedPrecondition) << paused.status();
  Delete("relayed");
  WaitGone("relayed");
}

}  // namespace
}  // namespace warren::node::testing
