// Several server replicas claiming from one store (both backends): each claim's lock names its
// replica, and a janitor resolves another replica's pending claim only once that replica is dead.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/testing/fake_clock.h"
#include "controller/claim/claim_metadata.h"
#include "controller/claim/pool_claimer.h"
#include "controller/leader/leader_elector.h"
#include "controller/leader/replica_liveness.h"
#include "controller/sandboxset_controller.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "controller/testing/pool_test_node.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"

namespace warren::controller::claim {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
namespace annotations = api::annotations;
using controller::testing::Eventually;
using store::testing::Backend;

// One replica's pool machinery: its own caches, claimer (named) and liveness view.
struct Replica {
  Replica(store::Store& store, const std::string& name, base::Clock& clock,
          bool with_controller = false)
      : informers(store, controller::testing::TestSecrets()),
        liveness(store, 15s, clock),
        claimer(informers, nullptr, nullptr, Options(name, &liveness), clock) {
    if (with_controller) controller = std::make_unique<SandboxSetController>(informers, nullptr);
    CHECK_OK(informers.Start());
    if (controller) CHECK_OK(controller->Start());
  }
  ~Replica() {
    claimer.Stop();
    if (controller) controller->Stop();
    informers.Stop();
  }
  static PoolClaimerOptions Options(const std::string& name, leader::ReplicaLiveness* liveness) {
    PoolClaimerOptions o;
    o.replica = name;
    o.liveness = liveness;
    return o;
  }
  PoolInformers informers;
  leader::ReplicaLiveness liveness;
  PoolClaimer claimer;
  std::unique_ptr<SandboxSetController> controller;
};

class PoolClaimerReplicasTest : public ::testing::TestWithParam<Backend> {
 protected:
  PoolClaimerReplicasTest() : store_(GetParam()) {}

  void SetUp() override {
    node_ = std::make_unique<controller::testing::PoolTestNode>(store_.store());
  }
  void TearDown() override { node_.reset(); }

  ClaimRequest Request(const std::string& owner) {
    ClaimRequest r;
    r.namespace_ = "default";
    r.pool = "py";
    r.owner = owner;
    r.access_token = "tok-" + owner;
    r.create_on_no_stock = false;
    r.timeout = 30s;
    return r;
  }
  api::Object Get(const std::string& name) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    EXPECT_TRUE(o.ok()) << name << ": " << o.status();
    return o.ok() ? *o : api::Object{};
  }
  // A pool of `n` Ready members, made by `r`'s set controller, which is then stopped (it would
  // refill behind a pending claim and scale down the member a rollback returns).
  void CreatePool(Replica& r, int n) {
    ASSERT_TRUE(store_->Create(store::testing::MakeSandboxSet("py", n)).ok());
    ASSERT_TRUE(Eventually(
        [&] { return r.claimer.index().Available("default", "py") == static_cast<size_t>(n); }));
    if (r.controller) r.controller->Stop();
  }
  // A claim left pending by replica `maker` (it stopped between its compare-and-swap and its
  // commit), claimed an hour ago, its deadline at `deadline`.
  api::Object LeavePending(const std::string& member, const std::string& maker,
                           base::WallTime deadline) {
    api::Object m = Get(member);
    ApplyClaim(m, Request("ghost-of-" + maker), NewClaimLock(maker), deadline - 1h, deadline,
               controller::testing::TestSecrets());
    auto written = store_->Update(m);
    EXPECT_TRUE(written.ok()) << written.status();
    return written.ok() ? *written : m;
  }
  bool ClaimedInStore(const std::string& name) {
    return Get(name).metadata.labels[labels::kSandboxClaimed] == "true";
  }

  store::testing::BackendStore store_;
  std::unique_ptr<controller::testing::PoolTestNode> node_;
};

TEST_P(PoolClaimerReplicasTest, ALockNamesItsReplica) {
  EXPECT_EQ(ReplicaOfLock(NewClaimLock("warren-a")), "warren-a");
  EXPECT_EQ(ReplicaOfLock(NewClaimLock("")), "");
  EXPECT_EQ(ReplicaOfLock("6f1c0d4e-lock-of-an-older-server"), "");
}

TEST_P(PoolClaimerReplicasTest, ALiveReplicasPendingClaimOutlivesAnotherReplicasRestart) {
  base::FakeClock clock_a, clock_b;
  // Replica a is alive: it renews its liveness lease.
  leader::LeaderElectorOptions la;
  la.name = leader::ReplicaLeaseName("warren-a");
  la.identity = "warren-a";
  la.lease_duration = 15s;
  leader::LeaderElector a_alive(store_.store(), la, clock_a);
  ASSERT_TRUE(a_alive.TryAcquireOrRenew());

  // Replica b has just (re)started.
  Replica b(store_.store(), "warren-b", clock_b, /*with_controller=*/true);
  CreatePool(b, 2);
  auto members = store_->List(api::SandboxKind(), {});
  ASSERT_EQ(members->items.size(), 2u);
  const std::string of_a = members->items[0].metadata.name;
  const std::string of_b = members->items[1].metadata.name;
  // a's claim, pending for 30 s more; and one b made in its earlier run, before it restarted.
  LeavePending(of_a, "warren-a", clock_b.Now() + 30s);
  LeavePending(of_b, "warren-b", clock_b.Now() + 30s);
  ASSERT_TRUE(b.informers.sandboxes().WaitForRevision(store_->CurrentRevision(), 5s));

  // b's startup pass: its own earlier run's claim at once; a's is a's to finish.
  EXPECT_EQ(b.claimer.RollBackAbandonedClaims(), 1);
  EXPECT_FALSE(ClaimedInStore(of_b));
  EXPECT_TRUE(ClaimedInStore(of_a));

  // a's deadline passes while a is alive: still a's.
  for (int i = 0; i < 8; ++i) {
    clock_a.Advance(5s);
    clock_b.Advance(5s);
    ASSERT_TRUE(a_alive.TryAcquireOrRenew());
    EXPECT_EQ(b.claimer.RollBackAbandonedClaims(), 0) << "pass " << i;
  }
  EXPECT_TRUE(ClaimedInStore(of_a));

  // a dies (stops renewing, as after kill -9): once b has seen its lease unchanged for its
  // duration, b resolves the claim, once.
  clock_b.Advance(14s);
  EXPECT_EQ(b.claimer.RollBackAbandonedClaims(), 0);
  clock_b.Advance(1s);
  EXPECT_EQ(b.claimer.RollBackAbandonedClaims(), 1);
  ASSERT_TRUE(b.informers.sandboxes().WaitForRevision(store_->CurrentRevision(), 5s));
  EXPECT_EQ(b.claimer.RollBackAbandonedClaims(), 0);
  api::Object back = Get(of_a);
  EXPECT_EQ(back.metadata.labels.at(labels::kSandboxClaimed), "false");
  EXPECT_FALSE(back.metadata.annotations.contains(annotations::kLock));
  ASSERT_NE(back.ControllerRef(), nullptr);
  EXPECT_EQ(back.ControllerRef()->name, "py");
}

TEST_P(PoolClaimerReplicasTest, TwoReplicasResolveADeadOnesClaimExactlyOnce) {
  base::FakeClock clock;
  Replica b(store_.store(), "warren-b", clock, /*with_controller=*/true);
  Replica c(store_.store(), "warren-c", clock);
  CreatePool(b, 1);
  ASSERT_TRUE(Eventually([&] { return c.claimer.index().Available("default", "py") == 1; }));
  auto members = store_->List(api::SandboxKind(), {});
  ASSERT_EQ(members->items.size(), 1u);
  // Replica a never registered a liveness lease (or released it): dead; its claim expired.
  LeavePending(members->items[0].metadata.name, "warren-a", clock.Now() - 1s);
  int64_t rv = store_->CurrentRevision();
  ASSERT_TRUE(b.informers.sandboxes().WaitForRevision(rv, 5s));
  ASSERT_TRUE(c.informers.sandboxes().WaitForRevision(rv, 5s));
  std::atomic<int> resolved{0};
  std::thread tb([&] { resolved += b.claimer.RollBackAbandonedClaims(); });
  std::thread tc([&] { resolved += c.claimer.RollBackAbandonedClaims(); });
  tb.join();
  tc.join();
  ASSERT_TRUE(Eventually([&] {
    resolved += b.claimer.RollBackAbandonedClaims() + c.claimer.RollBackAbandonedClaims();
    return !ClaimedInStore(members->items[0].metadata.name);
  }));
  EXPECT_EQ(resolved.load(), 1);
}

TEST_P(PoolClaimerReplicasTest, ABurstFromTwoReplicasNeverHandsASandboxOutTwice) {
  Replica a(store_.store(), "warren-a", base::RealClock(), /*with_controller=*/true);
  Replica b(store_.store(), "warren-b", base::RealClock());
  constexpr int kMembers = 32;
  CreatePool(a, kMembers);
  ASSERT_TRUE(Eventually([&] { return b.claimer.index().Available("default", "py") == kMembers; }));
  std::mutex mu;
  std::map<std::string, std::string> winner;  // sandbox → owner that got it
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  // More claims than members: the rest wait and time out; none may take a claimed member.
  for (int i = 0; i < kMembers + 8; ++i) {
    threads.emplace_back([&, i] {
      Replica& r = i % 2 ? b : a;
      ClaimRequest req = Request("owner-" + std::to_string(i));
      req.timeout = 3s;
      auto got = r.claimer.Claim(req);
      std::lock_guard lock(mu);
      if (!got.ok()) {
        if (got.status().code() != StatusCode::kResourceExhausted) {
          errors.push_back(got.status().ToString());
        }
        return;
      }
      auto [it, inserted] = winner.emplace(got->sandbox.metadata.name, req.owner);
      if (!inserted) errors.push_back("handed out twice: " + got->sandbox.metadata.name);
      std::string claim_lock = got->sandbox.metadata.annotations[annotations::kLock];
      if (ReplicaOfLock(claim_lock) != (i % 2 ? "warren-b" : "warren-a")) {
        errors.push_back("lock " + claim_lock + " does not name its replica");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(errors, ::testing::IsEmpty());
  EXPECT_EQ(winner.size(), static_cast<size_t>(kMembers));
  for (const auto& [name, owner] : winner) {
    api::Object s = Get(name);
    EXPECT_EQ(s.metadata.annotations[annotations::kOwner], owner) << name;
    EXPECT_FALSE(s.metadata.annotations.contains(pool_annotations::kClaimPending)) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(, PoolClaimerReplicasTest,
                         ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::controller::claim
