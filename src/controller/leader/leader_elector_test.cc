#include "controller/leader/leader_elector.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "base/testing/fake_clock.h"
#include "controller/leader/replica_liveness.h"
#include "controller/testing/eventually.h"
#include "store/testing/backend_store.h"

namespace warren::controller::leader {
namespace {

using namespace std::chrono_literals;
using store::testing::Backend;
using store::testing::BackendStore;

// Two or three candidates over one real store (both backends), time moved by hand.
class LeaderElectorTest : public ::testing::TestWithParam<Backend> {
 protected:
  LeaderElectorTest() : store_(GetParam()) {}

  struct Candidate {
    std::unique_ptr<LeaderElector> elector;
    int started = 0;
    int stopped = 0;
  };

  std::unique_ptr<Candidate> Make(const std::string& identity, base::Clock& clock) {
    auto c = std::make_unique<Candidate>();
    LeaderElectorOptions o;
    o.name = "test-lease";
    o.identity = identity;
    o.lease_duration = 15s;  // renew deadline 10 s, retry 5 s
    Candidate* raw = c.get();
    o.on_started_leading = [raw] { ++raw->started; };
    o.on_stopped_leading = [raw] { ++raw->stopped; };
    c->elector = std::make_unique<LeaderElector>(store_.store(), std::move(o), clock);
    return c;
  }

  api::LeaseSpec Lease() {
    auto got = store_->Get(api::LeaseKind(), api::kSystemNamespace, "test-lease");
    EXPECT_TRUE(got.ok()) << got.status();
    if (!got.ok()) return {};
    auto spec = api::DecodeSpec<api::LeaseSpec>(*got);
    EXPECT_TRUE(spec.ok()) << spec.status();
    return spec.ok() ? *spec : api::LeaseSpec{};
  }

  BackendStore store_;
  base::FakeClock clock_a_, clock_b_;
};

TEST_P(LeaderElectorTest, OneCandidateLeadsAndRenews) {
  auto a = Make("replica-a", clock_a_);
  auto b = Make("replica-b", clock_b_);
  EXPECT_TRUE(a->elector->TryAcquireOrRenew());
  EXPECT_TRUE(a->elector->IsLeader());
  EXPECT_EQ(a->started, 1);
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  EXPECT_FALSE(b->elector->IsLeader());
  EXPECT_EQ(b->started, 0);

  api::LeaseSpec first = Lease();
  EXPECT_EQ(first.holder_identity, "replica-a");
  EXPECT_EQ(first.lease_duration_seconds.value_or(-1), 15);
  EXPECT_EQ(first.lease_transitions.value_or(-1), 0);
  EXPECT_FALSE(first.acquire_time.empty());

  // Renewals keep it: b, watching the record change, never gets it.
  for (int i = 0; i < 6; ++i) {
    clock_a_.Advance(5s);
    clock_b_.Advance(5s);
    EXPECT_TRUE(a->elector->TryAcquireOrRenew());
    EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  }
  api::LeaseSpec later = Lease();
  EXPECT_EQ(later.holder_identity, "replica-a");
  EXPECT_EQ(later.acquire_time, first.acquire_time);
  EXPECT_NE(later.renew_time, first.renew_time);
  EXPECT_EQ(a->started, 1);
  EXPECT_EQ(a->stopped, 0);
}

TEST_P(LeaderElectorTest, TheHolderStopsBeforeAnotherCanTakeIt) {
  auto a = Make("replica-a", clock_a_);
  auto b = Make("replica-b", clock_b_);
  ASSERT_TRUE(a->elector->TryAcquireOrRenew());
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());  // b first sees the record now
  // a can no longer renew (partitioned): it goes on believing only until its renew deadline.
  clock_a_.Advance(9s);
  clock_b_.Advance(9s);
  EXPECT_FALSE(a->elector->CheckRenewDeadline());
  EXPECT_TRUE(a->elector->IsLeader());
  clock_a_.Advance(1s);
  clock_b_.Advance(1s);
  EXPECT_TRUE(a->elector->CheckRenewDeadline());
  EXPECT_FALSE(a->elector->IsLeader());
  EXPECT_EQ(a->stopped, 1);
  // b still waits: the record has been unchanged for 10 s of its 15.
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  clock_b_.Advance(4900ms);
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  clock_b_.Advance(100ms);
  EXPECT_TRUE(b->elector->TryAcquireOrRenew());
  EXPECT_EQ(b->started, 1);
  api::LeaseSpec now = Lease();
  EXPECT_EQ(now.holder_identity, "replica-b");
  EXPECT_EQ(now.lease_transitions.value_or(-1), 1);
  // a comes back: it sees b's record and stays out.
  clock_a_.Advance(1s);
  EXPECT_FALSE(a->elector->TryAcquireOrRenew());
  EXPECT_EQ(a->started, 1);
}

TEST_P(LeaderElectorTest, ACandidateFirstSeeingAnOldLeaseWaitsAWholeDuration) {
  // Clocks of other machines are never trusted: a renewTime far in the past means nothing
  // until this candidate has itself watched the record stay unchanged.
  auto a = Make("replica-a", clock_a_);
  ASSERT_TRUE(a->elector->TryAcquireOrRenew());
  clock_b_.Advance(1h);
  auto b = Make("replica-b", clock_b_);
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  clock_b_.Advance(14s);
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  clock_b_.Advance(1s);
  EXPECT_TRUE(b->elector->TryAcquireOrRenew());
}

TEST_P(LeaderElectorTest, AReleasedLeaseIsTakenAtOnce) {
  auto a = Make("replica-a", clock_a_);
  auto b = Make("replica-b", clock_b_);
  ASSERT_TRUE(a->elector->TryAcquireOrRenew());
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  a->elector->Stop();  // not started: stops leading and releases
  EXPECT_EQ(a->stopped, 1);
  EXPECT_EQ(Lease().holder_identity, "");
  EXPECT_TRUE(b->elector->TryAcquireOrRenew());
  EXPECT_EQ(Lease().holder_identity, "replica-b");
  EXPECT_EQ(Lease().lease_transitions.value_or(-1), 1);
}

TEST_P(LeaderElectorTest, ARestartedReplicaTakesBackItsOwnLeaseAtOnce) {
  auto a = Make("replica-a", clock_a_);
  ASSERT_TRUE(a->elector->TryAcquireOrRenew());
  std::string acquired = Lease().acquire_time;
  a.reset();  // a crash would leave it held; Stop released it, so put the holder back
  auto stored = store_->Get(api::LeaseKind(), api::kSystemNamespace, "test-lease");
  ASSERT_TRUE(stored.ok());
  api::LeaseSpec spec = *api::DecodeSpec<api::LeaseSpec>(*stored);
  spec.holder_identity = "replica-a";
  api::EncodeSpec(spec, *stored);
  ASSERT_TRUE(store_->Update(*stored).ok());

  base::FakeClock fresh;
  auto again = Make("replica-a", fresh);
  auto b = Make("replica-b", clock_b_);
  EXPECT_FALSE(b->elector->TryAcquireOrRenew());
  EXPECT_TRUE(again->elector->TryAcquireOrRenew());
  EXPECT_EQ(again->started, 1);
}

TEST_P(LeaderElectorTest, ConcurrentCandidatesNeverBothLead) {
  // Real threads and clock, a short lease: at every instant at most one believes it leads.
  std::atomic<int> leaders{0};
  std::atomic<int> overlaps{0};
  std::atomic<int> terms{0};
  std::vector<std::unique_ptr<LeaderElector>> electors;
  for (int i = 0; i < 3; ++i) {
    LeaderElectorOptions o;
    o.name = "race";
    o.identity = "replica-" + std::to_string(i);
    o.lease_duration = 600ms;
    o.on_started_leading = [&] {
      if (leaders.fetch_add(1) != 0) overlaps++;
      terms++;
    };
    o.on_stopped_leading = [&] { leaders.fetch_sub(1); };
    electors.push_back(std::make_unique<LeaderElector>(store_.store(), std::move(o)));
  }
  for (auto& e : electors) ASSERT_TRUE(e->Start().ok());
  ASSERT_TRUE(controller::testing::Eventually([&] { return terms.load() >= 1; }));
  // The leader leaves cleanly twice: each time another takes over within a retry period or so.
  for (int round = 0; round < 2; ++round) {
    std::unique_ptr<LeaderElector>* leader = nullptr;
    ASSERT_TRUE(controller::testing::Eventually([&] {
      for (auto& e : electors) {
        if (e && e->IsLeader()) leader = &e;
      }
      return leader != nullptr;
    }));
    int before = terms.load();
    (*leader)->Stop();
    leader->reset();
    ASSERT_TRUE(controller::testing::Eventually([&] { return terms.load() > before; }));
  }
  for (auto& e : electors) {
    if (e) e->Stop();
  }
  EXPECT_EQ(overlaps.load(), 0);
  EXPECT_EQ(leaders.load(), 0);
}

TEST_P(LeaderElectorTest, AReplicaIsDeadOnceItsLeaseStopsChanging) {
  LeaderElectorOptions o;
  o.name = ReplicaLeaseName("Host-1:7780");
  o.identity = "Host-1:7780";
  o.lease_duration = 15s;
  LeaderElector a(store_.store(), o, clock_a_);
  ReplicaLiveness liveness(store_.store(), 15s, clock_b_);
  EXPECT_EQ(o.name, "replica-host-1-7780");
  EXPECT_FALSE(liveness.IsAlive("Host-1:7780"));  // never registered
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_TRUE(liveness.IsAlive("Host-1:7780"));
  for (int i = 0; i < 5; ++i) {
    clock_a_.Advance(5s);
    clock_b_.Advance(5s);
    ASSERT_TRUE(a.TryAcquireOrRenew());
    EXPECT_TRUE(liveness.IsAlive("Host-1:7780"));
  }
  // a stops renewing (kill -9): dead once b has seen the same record for a duration.
  clock_b_.Advance(14s);
  EXPECT_TRUE(liveness.IsAlive("Host-1:7780"));
  clock_b_.Advance(1s);
  EXPECT_FALSE(liveness.IsAlive("Host-1:7780"));
  // a renews again (it was only slow): alive.
  clock_a_.Advance(1s);
  ASSERT_TRUE(a.TryAcquireOrRenew());
  EXPECT_TRUE(liveness.IsAlive("Host-1:7780"));
  // A clean stop releases it: dead at once.
  a.Stop();
  EXPECT_FALSE(liveness.IsAlive("Host-1:7780"));
}

INSTANTIATE_TEST_SUITE_P(, LeaderElectorTest, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::controller::leader
