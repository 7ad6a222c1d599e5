// `kill -9` of `warren server` in the middle of a burst of E2B creates served from a pool, then
// a restart on the same data directory: every sandbox is claimed exactly once or back in the
// pool, none is lost, none is left half-claimed, and the runtime holds exactly the sandboxes the
// store does. Real server, node agent, sandboxes (root).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "base/check.h"
#include "base/encoding.h"
#include "e2b_client.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

constexpr int kPool = 32;
constexpr const char* kSet = "crash";

std::string Label(const api::Json& o, const std::string& key) {
  const auto& labels = o["metadata"].value("labels", api::Json::object());
  return labels.value(key, "");
}
std::string Annotation(const api::Json& o, const std::string& key) {
  const auto& a = o["metadata"].value("annotations", api::Json::object());
  return a.value(key, "");
}

// The node agent's runtime state and cgroups of a data directory (node/options.cc: the
// directory's SHA-256 names them), by sandbox id.
std::string NodeHash(const std::string& data_dir) {
  char real[PATH_MAX];
  CHECK(realpath(data_dir.c_str(), real) != nullptr);
  return base::Sha256Hex(real).substr(0, 12);
}
std::set<std::string> Children(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().filename();
    if (e.is_directory() && !name.empty() && name[0] != '.') out.insert(name);
  }
  return out;
}
std::set<std::string> RuntimeSandboxes(const std::string& data_dir) {
  return Children("/run/warren/" + NodeHash(data_dir));
}
std::set<std::string> SandboxCgroups(const std::string& data_dir) {
  return Children("/sys/fs/cgroup/memory/warren-" + NodeHash(data_dir));
}

TEST(ClaimCrash, KillNineDuringAClaimBurstLosesAndLeaksNothing) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
  WarrenServer server;  // deletes its sandboxes when it goes
  server.EnableNodeAgent();
  std::string key = BootstrapAdminKey(server);
  server.Start();
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

  // 16 clients claim until the server dies under them; the kill comes from the client that
  // sees the fourth answer, so claims are still in flight.
  E2bClient e2b(server, key);
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> answered;  // sandbox ids that got a 201
  bool stop = false;
  std::vector<std::thread> clients;
  for (int c = 0; c < 16; ++c) {
    clients.emplace_back([&] {
      while (true) {
        {
          std::lock_guard lock(mu);
          if (stop) return;
        }
        auto r = e2b.Create(kSet, /*create_on_no_stock=*/false);
        std::lock_guard lock(mu);
        if (stop) return;  // answered after the kill: cannot happen, but never count it
        if (!r.ok()) continue;
        answered.push_back((*r)["sandboxID"]);
        if (answered.size() == 4) {
          stop = true;
          cv.notify_all();
        }
      }
    });
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, 120s, [&] { return stop; })) << server.log();
  }
  server.Kill9();
  for (auto& t : clients) t.join();
  fprintf(stderr, "killed the server with %zu claims answered\n", answered.size());
  ASSERT_LT(answered.size(), static_cast<size_t>(kPool)) << "the burst finished before the kill";

  server.Start();
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
  fprintf(stderr, "after the restart: %d claimed (%zu answered), %d back in the pool\n", claimed,
          answered.size(), pooled);
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
  std::set<std::string> store_ids;
  for (const auto& o : *all) {
    EXPECT_EQ(o["status"].value("phase", ""), "Running") << o["metadata"]["name"];
    store_ids.insert(Label(o, "agents.kruise.io/sandbox-id"));
  }
  EXPECT_EQ(RuntimeSandboxes(server.data_dir()), store_ids);
  EXPECT_EQ(SandboxCgroups(server.data_dir()), store_ids);
  // And deleting them leaves nothing behind.
  ASSERT_TRUE(server.DeleteEverything(180s));
  EXPECT_TRUE(Eventually([&] { return RuntimeSandboxes(server.data_dir()).empty(); }, 60s));
  EXPECT_TRUE(SandboxCgroups(server.data_dir()).empty());
}

}  // namespace
}  // namespace warren::pool_testing
