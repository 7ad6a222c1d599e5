// 64 E2B creates at once against a pool of 64 real sandboxes in a real `warren server`: every
// caller gets a different sandbox, each claimed under the caller's key and initialised with the
// caller's env; then the pool refills. Real server, node agent, sandboxes (root).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "e2b_client.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

TEST(ConcurrentClaims, SixtyFourAtOnceNeverShareASandboxAndThePoolRefills) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
  constexpr int kN = 64;
  WarrenServer server;  // deletes its sandboxes when it goes
  server.EnableNodeAgent();
  std::string key = BootstrapAdminKey(server);
  server.Start();
  server.Apply(PoolManifest("many", kN));
  ASSERT_TRUE(Eventually([&] { return AvailableReplicas(server, "many") >= kN; }, 600s))
      << server.log();

  E2bClient e2b(server, key);
  std::mutex mu;
  std::map<std::string, int> owner_of;          // sandbox id → the caller that got it
  std::map<std::string, std::string> token_of;  // sandbox id → its envd access token
  std::vector<std::string> errors;
  std::vector<std::thread> callers;
  for (int i = 0; i < kN; ++i) {
    callers.emplace_back([&, i] {
      auto r = e2b.Create("many", /*create_on_no_stock=*/false, {{"CALLER", std::to_string(i)}});
      std::lock_guard lock(mu);
      if (!r.ok()) {
        errors.push_back(r.status().ToString());
        return;
      }
      std::string id = (*r)["sandboxID"];
      if (!owner_of.emplace(id, i).second) errors.push_back("handed out twice: " + id);
      token_of[id] = (*r).value("envdAccessToken", "");
    });
  }
  for (auto& t : callers) t.join();
  ASSERT_THAT(errors, ::testing::IsEmpty());
  ASSERT_EQ(owner_of.size(), static_cast<size_t>(kN));

  // The store agrees (each sandbox's /init body is sealed on it; envd's view is checked through
  // the gateway below).
  auto claimed = ListSandboxes(server, "agents.kruise.io/sandbox-claimed=true");
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), static_cast<size_t>(kN));
  for (const auto& o : *claimed) {
    std::string id = o["metadata"]["labels"]["agents.kruise.io/sandbox-id"];
    ASSERT_TRUE(owner_of.contains(id)) << id;
    EXPECT_TRUE(o["metadata"]["annotations"].contains("secrets.warren.dev/init-request"));
    EXPECT_EQ(api::DumpJson(o).find("\"CALLER\""), std::string::npos) << "env vars are sealed";
    EXPECT_TRUE(o["metadata"]["annotations"].contains("agents.kruise.io/owner"));
  }
  // Through the gateway, each caller's envd holds that caller's env vars and token.
  std::ifstream port_file(server.data_dir() + "/gateway.port");
  int gateway_port = 0;
  port_file >> gateway_port;
  ASSERT_GT(gateway_port, 0);
  auto gateway = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(gateway_port));
  ASSERT_TRUE(gateway.ok());
  for (const auto& [id, caller] : owner_of) {
    net::ClientRequest req{.method = "GET", .target = "/envs"};
    req.headers.Set("E2b-Sandbox-Id", id);
    req.headers.Set("E2b-Sandbox-Port", "49983");
    req.headers.Set("X-Access-Token", token_of[id]);
    auto r = (*gateway)->Do(req);
    ASSERT_TRUE(r.ok()) << r.status();
    ASSERT_EQ(r->status, 200) << id << ": " << r->body;
    auto envs = api::ParseJson(r->body);
    ASSERT_TRUE(envs.ok());
    EXPECT_EQ((*envs).value("CALLER", ""), std::to_string(caller)) << id;
  }
  // The pool refills behind the claims.
  EXPECT_TRUE(Eventually([&] { return AvailableReplicas(server, "many") >= kN; }, 600s))
      << server.log();
}

}  // namespace
}  // namespace warren::pool_testing
