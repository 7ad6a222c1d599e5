#include "gateway/gateway_component.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "gateway/testing/loopback_dialer.h"
#include "net/http_client.h"
#include "net/http_server.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;

class GatewayComponentTest : public ::testing::Test {
 protected:
  const api::SandboxSecrets secrets_ = api::SandboxSecrets::ForTesting();
  void SetUp() override {
    net::Router router;
    router.Add("GET", "/who",
               [](net::Request&&, net::Responder r) { r.Send(net::Response::Text(200, "envd")); });
    upstream_ =
        net::HttpServer::Start(net::ServerOptions{.loop_threads = 1}, std::move(router)).value();
    auto dialer = std::make_unique<testing::LoopbackDialer>();
    dialer_ = dialer.get();
    GatewayComponentOptions options;
    options.gateway.server.port = 0;
    options.port_file = dir_.path() + "/gateway.port";
    options.metrics = &metrics_;
    component_ =
        std::make_unique<GatewayComponent>(store_.store(), secrets_, std::move(dialer), options);
  }

  api::Object MakeRunning(const std::string& name, const std::string& id) {
    api::Object o = store::testing::MakeSandbox(name, {{api::labels::kSandboxId, id}});
    o = store_->Create(o).value();
    o.status()["phase"] = "Running";
    return store_->UpdateStatus(o).value();
  }

  // One keep-alive client per test: its requests ride one connection, so they are served by one
  // gateway loop and reuse that loop's idle upstream connections.
  net::Response Get(const std::string& id) {
    if (!client_) {
      client_ =
          net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(component_->port())).value();
    }
    net::ClientRequest req{.target = "/who"};
    req.headers.Set("E2b-Sandbox-Id", id);
    auto resp = client_->Do(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : net::Response{};
  }

  store::testing::TempDir dir_;
  store::testing::TempStore store_;
  obs::Metrics metrics_;
  std::unique_ptr<net::HttpServer> upstream_;
  testing::LoopbackDialer* dialer_ = nullptr;
  std::unique_ptr<GatewayComponent> component_;
  std::unique_ptr<net::HttpClient> client_;
};

TEST_F(GatewayComponentTest, StartsFromTheStoreAndWritesItsPort) {
  api::Object running = MakeRunning("a", "iaaa");
  dialer_->Map("iaaa", kEnvdPort, upstream_->port());
  EXPECT_FALSE(component_->Ready());
  ASSERT_TRUE(component_->Start().ok());
  EXPECT_TRUE(component_->Ready());
  std::ifstream port_file(dir_.path() + "/gateway.port");
  int written = 0;
  port_file >> written;
  EXPECT_EQ(written, component_->port());
  EXPECT_EQ(Get("iaaa").body, "envd") << "the first list routes without waiting for events";
  component_->Stop();
  EXPECT_FALSE(component_->Ready());
  component_->Stop();  // idempotent
}

TEST_F(GatewayComponentTest, NotificationsApplyAtOnceAndTheWatchCannotUndoAKill) {
  ASSERT_TRUE(component_->Start().ok());
  dialer_->Map("ibbb", kEnvdPort, upstream_->port());
  // The E2B layer's create: written, then told, before the watch may have caught up.
  api::Object created = MakeRunning("b", "ibbb");
  component_->SandboxChanged(created);
  EXPECT_EQ(Get("ibbb").body, "envd");
  // Kill: deleted and told with the deletion's revision; the 502 is immediate.
  api::Object deleted = store_->Delete(api::SandboxKind(), "default", "b").value();
  component_->SandboxRemoved("ibbb", deleted.metadata.uid, deleted.metadata.resource_version);
  EXPECT_EQ(Get("ibbb").status, 502);
  // A late notification of the earlier state is fenced off.
  component_->SandboxChanged(created);
  EXPECT_EQ(Get("ibbb").status, 502);
  // An object without a sandbox id is ignored, not a crash.
  component_->SandboxChanged(store::testing::MakeSandbox("no-id"));
}

TEST_F(GatewayComponentTest, MetricsAreExposedWhileRunning) {
  MakeRunning("c", "iccc");
  dialer_->Map("iccc", kEnvdPort, upstream_->port());
  ASSERT_TRUE(component_->Start().ok());
  Get("iccc");
  Get("iccc");
  Get("inope");
  std::string text = metrics_.Exposition();
  EXPECT_NE(text.find("warren_gateway_requests_total{result=\"relayed\"} 2"), std::string::npos)
      << text;
  EXPECT_NE(text.find("warren_gateway_requests_total{result=\"not_found\"} 1"), std::string::npos);
  EXPECT_NE(text.find("warren_gateway_routes{state=\"running\"} 1"), std::string::npos);
  EXPECT_NE(text.find("warren_gateway_upstream_connections_total{kind=\"reused\"} 1"),
            std::string::npos);
  // Counters advance by what happened since the last scrape, not by the running total again.
  Get("iccc");
  text = metrics_.Exposition();
  EXPECT_NE(text.find("warren_gateway_requests_total{result=\"relayed\"} 3"), std::string::npos)
      << text;
  component_->Stop();
  // Nothing of a stopped gateway is collected any more (no callback into freed memory).
  EXPECT_NO_FATAL_FAILURE(metrics_.Exposition());
}

TEST(GatewayPortTest, FollowsTheServerPort) {
  EXPECT_EQ(GatewayPortFor(7780), 7781);
  EXPECT_EQ(GatewayPortFor(0), 0);
  EXPECT_EQ(GatewayPortFor(65535), 0);
}

}  // namespace
}  // namespace warren::gateway
