// `kill -9` of `warren server` in the middle of a burst of E2B creates served from a pool, then
// a restart on the same data directory: every sandbox is claimed exactly once or back in the
// pool, none is lost, none is left half-claimed, and the runtime holds exactly the sandboxes the
// store does. Real server, node agent, sandboxes (root).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "e2b_client.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

constexpr int kPool = 24;
constexpr const char* kSet = "crash";

std::string Label(const api::Json& o, const std::string& key) {
  const auto& labels = o["metadata"].value("labels", api::Json::object());
  return labels.value(key, "");
}
std::string Annotation(const api::Json& o, const std::string& key) {
  const auto& a = o["metadata"].value("annotations", api::Json::object());
  return a.value(key, "");
}

TEST(ClaimCrash, KillNineDuringAClaimBurstLosesAndLeaksNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
  WarrenServer server;
  std::string key = BootstrapAdminKey(server);
  std::vector<std::string> args = {"--gateway-port", "0", "--gateway-port-file",
                                   server.data_dir() + "/gw.port"};
  server.Start(args);
  server.Apply(PoolManifest(kSet, kPool));
  ASSERT_TRUE(Eventually([&] { return AvailableReplicas(server, kSet) >= kPool; }, 600s))
      << server.log();
  // From here on nothing new is created (maxUnavailable 0), so the pool's sandboxes are exactly
  // these: every one must be accounted for after the crash.
  auto [code, out] = server.Cli({"patch", "sbs", kSet, "--type", "merge", "-p",
                                 R"({"spec":{"scaleStrategy":{"maxUnavailable":0}}})"});
  if (code != 0) {
    // No `patch` verb: apply the same change.
    server.Apply(PoolManifest(kSet, kPool, "  scaleStrategy:\n    maxUnavailable: 0\n"));
  }
  auto before = ListSandboxes(server, std::string("agents.kruise.io/sandbox-pool=") + kSet);
  ASSERT_TRUE(before.ok());
  ASSERT_EQ(before->size(), static_cast<size_t>(kPool));
  std::set<std::string> uids;
  for (const auto& o : *before) uids.insert(o["metadata"]["uid"]);

  // 16 clients claim until the server dies under them.
  E2bClient e2b(server, key);
  std::mutex mu;
  std::vector<std::string> answered;  // sandbox ids that got a 201
  std::atomic<int> answers{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      while (!stop) {
        auto r = e2b.Create(kSet, /*create_on_no_stock=*/false);
        if (!r.ok()) continue;
        std::lock_guard lock(mu);
        answered.push_back((*r)["sandboxID"]);
        ++answers;
      }
    });
  }
  ASSERT_TRUE(Eventually([&] { return answers >= 6; }, 120s)) << server.log();
  server.Kill9();
  stop = true;
  for (auto& t : clients) t.join();
  ASSERT_LT(answered.size(), static_cast<size_t>(kPool)) << "the burst finished before the kill";

  server.Start(args);
  // The janitor rolls back the claims the dead server left half done.
  std::vector<api::Json> after;
  bool settled = Eventually(
      [&] {
        auto list = ListSandboxes(server, std::string("agents.kruise.io/sandbox-pool=") + kSet);
        if (!list.ok()) return false;
        after = *list;
        for (const auto& o : after) {
          if (!Annotation(o, "warren.dev/claim-pending").empty()) return false;
        }
        return true;
      },
      120s);
  ASSERT_TRUE(settled) << server.log();

  // No sandbox was handed out twice.
  std::set<std::string> distinct(answered.begin(), answered.end());
  EXPECT_EQ(distinct.size(), answered.size());
  // None lost: exactly the pool's sandboxes, by uid.
  std::set<std::string> uids_after;
  std::map<std::string, api::Json> by_id;
  for (const auto& o : after) {
    uids_after.insert(o["metadata"]["uid"]);
    by_id[Label(o, "agents.kruise.io/sandbox-id")] = o;
  }
  EXPECT_EQ(uids_after, uids);
  // Every answered claim is a committed claim; every other sandbox is claimed and committed
  // (its answer was lost with the process: it is the caller's, listed under their key) or back
  // in the pool, owned by the set.
  int claimed = 0, pooled = 0;
  for (const auto& [id, o] : by_id) {
    std::string state = Label(o, "agents.kruise.io/sandbox-claimed");
    if (state == "true") {
      ++claimed;
      EXPECT_FALSE(Annotation(o, "agents.kruise.io/owner").empty()) << id;
    } else {
      ++pooled;
      EXPECT_EQ(state, "false") << id;
      ASSERT_TRUE(o["metadata"].contains("ownerReferences")) << id;
      EXPECT_EQ(o["metadata"]["ownerReferences"][0]["name"], kSet) << id;
    }
  }
  for (const auto& id : answered) {
    ASSERT_TRUE(by_id.contains(id)) << id;
    EXPECT_EQ(Label(by_id[id], "agents.kruise.io/sandbox-claimed"), "true") << id;
  }
  EXPECT_GE(claimed, static_cast<int>(answered.size()));
  EXPECT_EQ(claimed + pooled, kPool);

  // The pool's remaining members are claimable again, each once.
  ASSERT_TRUE(Eventually([&] { return AvailableReplicas(server, kSet) == pooled; }, 120s));
  std::set<std::string> second;
  for (int i = 0; i < pooled; ++i) {
    auto r = e2b.Create(kSet, false);
    ASSERT_TRUE(r.ok()) << r.status();
    std::string id = (*r)["sandboxID"];
    EXPECT_FALSE(distinct.contains(id)) << id << " was already handed out before the crash";
    EXPECT_TRUE(second.insert(id).second) << id;
  }
  // The runtime holds exactly the store's sandboxes: nothing leaked on either side.
  auto all = ListSandboxes(server, "");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), static_cast<size_t>(kPool));
  for (const auto& o : *all) {
    EXPECT_EQ(o["status"].value("phase", ""), "Running") << o["metadata"]["name"];
  }
  server.Stop();
}

}  // namespace
}  // namespace warren::pool_testing
