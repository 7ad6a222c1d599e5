// A 3-member etcd cluster loses a member (SIGKILL, as a machine that dies) in the middle of a
// burst of creates: every create the store acknowledged must still be there afterwards, read
// through the surviving members, and the store must keep serving through them.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include "api/kinds.h"
#include "net/http_client.h"
#include "store/etcd_store.h"
#include "store/testing/etcd_process.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using namespace std::chrono_literals;
using testing::EtcdCluster;
using testing::MakeSandbox;

// The member that leads the cluster now (by asking each one), or -1.
int Leader(const EtcdCluster& cluster) {
  for (size_t i = 0; i < cluster.endpoints().size(); ++i) {
    auto client = net::HttpClient::ForAddress(cluster.endpoints()[i]);
    if (!client.ok()) continue;
    net::ClientRequest req;
    req.method = "POST";
    req.target = "/v3/maintenance/status";
    req.body = "{}";
    req.timeout = 2s;
    auto r = (*client)->Do(req);
    if (!r.ok() || r->status != 200) continue;
    auto body = api::ParseJson(r->body);
    if (!body.ok()) continue;
    if ((*body)["leader"] == (*body)["header"]["member_id"]) return static_cast<int>(i);
  }
  return -1;
}

TEST(EtcdMemberLost, NoAcknowledgedCreateIsLostAndTheStoreKeepsServing) {
  EtcdCluster cluster(3);
  auto options = ParseEtcdUrl(cluster.Url());
  ASSERT_TRUE(options.ok()) << options.status();
  // The leader goes, and the store talks to it: the worst member to lose, as the store's
  // requests in flight break and an election follows before anyone can commit.
  const int victim = Leader(cluster);
  ASSERT_GE(victim, 0) << "no leader";
  if (victim != 0) std::swap(options->endpoints[0], options->endpoints[victim]);
  auto opened = EtcdStore::Open(*options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;

  WatchOptions wopts;
  wopts.resource_version = store.CurrentRevision();
  auto watch = store.Watch(&api::SandboxKind(), wopts);
  ASSERT_TRUE(watch.ok()) << watch.status();

  constexpr int kThreads = 4;
  std::mutex mu;
  std::set<std::string> acknowledged;
  std::atomic<int> failed{0};
  std::atomic<int> false_conflicts{0};
  std::atomic<int> after_kill{0};
  std::atomic<bool> killed{false};
  std::atomic<bool> stop{false};
  std::vector<std::thread> writers;
  for (int t = 0; t < kThreads; ++t) {
    writers.emplace_back([&, t] {
      for (int i = 0; !stop.load(); ++i) {
        std::string name = fmt::format("burst-{}-{}", t, i);
        auto r = store.Create(MakeSandbox(name));
        if (!r.ok()) {
          ++failed;  // not acknowledged: allowed to be lost (or not)
          // Each name is created once: AlreadyExists would be a create whose answer was lost
          // with the member, retried, and then mistaken for someone else's.
          if (r.status().code() == StatusCode::kAlreadyExists) ++false_conflicts;
          continue;
        }
        if (killed.load()) ++after_kill;
        std::lock_guard lock(mu);
        acknowledged.insert(name);
      }
    });
  }
  auto count = [&] {
    std::lock_guard lock(mu);
    return acknowledged.size();
  };
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (count() < 150 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  cluster.Kill(victim);
  killed = true;
  while (after_kill.load() < 150 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  stop = true;
  for (auto& w : writers) w.join();
  std::printf("member %d killed; acknowledged %zu creates (%d after the kill), %d failed\n", victim,
              acknowledged.size(), after_kill.load(), failed.load());
  EXPECT_GE(after_kill.load(), 150) << "the store did not keep serving through the others";
  EXPECT_EQ(false_conflicts.load(), 0);

  // Every acknowledged create is there, read through the surviving members by the same store
  // and by a fresh one that knows only the survivors.
  EtcdStoreOptions survivors = *options;
  survivors.endpoints.erase(survivors.endpoints.begin());  // the victim
  auto fresh = EtcdStore::Open(survivors);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto listed = (*fresh)->List(api::SandboxKind(), {});
  ASSERT_TRUE(listed.ok()) << listed.status();
  std::set<std::string> present;
  for (const auto& o : listed->items) present.insert(o.metadata.name);
  int lost = 0;
  for (const auto& name : acknowledged) {
    if (!present.count(name)) {
      ++lost;
      ADD_FAILURE() << name << " was acknowledged and is gone";
    }
    if (lost > 5) break;
  }
  EXPECT_EQ(lost, 0);
  for (const auto& name : {*acknowledged.begin(), *acknowledged.rbegin()}) {
    EXPECT_TRUE(store.Get(api::SandboxKind(), "default", name).ok()) << name;
  }

  // The watch moved to a surviving member and missed none of them.
  std::set<std::string> seen;
  auto watch_deadline = std::chrono::steady_clock::now() + 20s;
  while (seen.size() < present.size() && std::chrono::steady_clock::now() < watch_deadline) {
    auto e = (*watch)->Next(200ms);
    ASSERT_TRUE(e.ok()) << "the watch ended: " << e.status();
    if (*e && (*e)->type == EventType::kAdded) seen.insert((*e)->object->metadata.name);
  }
  for (const auto& name : acknowledged) {
    if (!seen.count(name)) {
      ADD_FAILURE() << "the watch never saw " << name;
      break;
    }
  }
}

// A watch that has been quiet for longer than the store's request timeout still moves to another
// member when its own goes away (only failures in a row count towards giving up).
TEST(EtcdMemberLost, AQuietWatchMovesToAnotherMember) {
  EtcdCluster cluster(3);
  auto options = ParseEtcdUrl(cluster.Url());
  ASSERT_TRUE(options.ok()) << options.status();
  // A follower first: its loss breaks the watch's stream without an election.
  const int leader = Leader(cluster);
  ASSERT_GE(leader, 0) << "no leader";
  const int victim = leader == 0 ? 1 : 0;
  if (victim != 0) std::swap(options->endpoints[0], options->endpoints[victim]);
  options->request_timeout = 2s;
  auto opened = EtcdStore::Open(*options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EtcdStore& store = **opened;
  WatchOptions wopts;
  wopts.resource_version = store.CurrentRevision();
  auto watch = store.Watch(&api::SandboxKind(), wopts);
  ASSERT_TRUE(watch.ok()) << watch.status();
  auto quiet = (*watch)->Next(3s);
  ASSERT_TRUE(quiet.ok()) << quiet.status();
  ASSERT_FALSE(quiet->has_value());

  cluster.Kill(victim);
  ASSERT_TRUE(store.Create(MakeSandbox("after")).ok());
  auto e = (*watch)->Next(10s);
  ASSERT_TRUE(e.ok()) << "the watch ended: " << e.status();
  ASSERT_TRUE(e->has_value()) << "the watch saw nothing";
  EXPECT_EQ((*e)->object->metadata.name, "after");
}

// A store whose only member is away while the others write and compact past where its watch
// feed stood: when the member comes back, the store's watches end with OutOfRange (410 Gone,
// list again) instead of skipping what was compacted, and a new watch works.
TEST(EtcdMemberLost, AWatchThatMissedACompactionIsGoneAndANewOneWorks) {
  EtcdCluster cluster(3);
  auto all = ParseEtcdUrl(cluster.Url());
  ASSERT_TRUE(all.ok()) << all.status();
  EtcdStoreOptions only_first = *all;
  only_first.endpoints = {all->endpoints[0]};
  auto lonely = EtcdStore::Open(only_first);
  ASSERT_TRUE(lonely.ok()) << lonely.status();
  WatchOptions wopts;
  wopts.resource_version = (*lonely)->CurrentRevision();
  auto watch = (*lonely)->Watch(&api::SandboxKind(), wopts);
  ASSERT_TRUE(watch.ok()) << watch.status();

  cluster.Kill(0);
  EtcdStoreOptions others = *all;
  others.endpoints.erase(others.endpoints.begin());
  auto writer = EtcdStore::Open(others);
  ASSERT_TRUE(writer.ok()) << writer.status();
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*writer)->Create(MakeSandbox(fmt::format("while-away-{}", i))).ok());
  }
  {
    auto client = net::HttpClient::ForAddress(others.endpoints[0]);
    ASSERT_TRUE(client.ok());
    net::ClientRequest req;
    req.method = "POST";
    req.target = "/v3/kv/compaction";
    req.body = fmt::format(R"({{"revision": "{}"}})", (*writer)->CurrentRevision());
    auto r = (*client)->Do(req);
    ASSERT_TRUE(r.ok() && r->status == 200) << (r.ok() ? r->body : r.status().ToString());
  }
  cluster.Restart(0);

  Status ended;
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (ended.ok() && std::chrono::steady_clock::now() < deadline) {
    auto e = (*watch)->Next(200ms);
    if (!e.ok()) {
      ended = e.status();
    } else {
      ASSERT_FALSE(e->has_value()) << "an event past a compaction: " << (*e)->object->metadata.name;
    }
  }
  EXPECT_EQ(ended.code(), StatusCode::kOutOfRange) << ended;

  auto fresh = (*lonely)->Watch(&api::SandboxKind(), {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::set<std::string> names;
  for (int i = 0; i < 5; ++i) {
    auto e = (*fresh)->Next(10s);
    ASSERT_TRUE(e.ok() && e->has_value()) << "the new watch's list is short: " << names.size();
    names.insert((*e)->object->metadata.name);
  }
  ASSERT_TRUE((*writer)->Create(MakeSandbox("after")).ok());
  auto live = (*fresh)->Next(10s);
  ASSERT_TRUE(live.ok() && live->has_value()) << "the new watch missed a live create";
  EXPECT_EQ((*live)->object->metadata.name, "after");
}

}  // namespace
}  // namespace warren::store
