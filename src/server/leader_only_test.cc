#include "server/leader_only.h"

#include <gtest/gtest.h>

#include <atomic>

#include "controller/testing/eventually.h"
#include "store/testing/backend_store.h"

namespace warren::server {
namespace {

using namespace std::chrono_literals;
using controller::testing::Eventually;
using store::testing::Backend;

// Counts the parts running across every replica of a test.
struct Counters {
  std::atomic<int> running{0};
  std::atomic<int> most{0};
  std::atomic<int> starts{0};
};

class CountingPart final : public Component {
 public:
  explicit CountingPart(Counters& c) : c_(c) {}
  std::string_view name() const override { return "counting"; }
  Status Start() override {
    int now = ++c_.running;
    int most = c_.most.load();
    while (now > most && !c_.most.compare_exchange_weak(most, now)) {
    }
    ++c_.starts;
    return Status::Ok();
  }
  void Stop() override { --c_.running; }

 private:
  Counters& c_;
};

LeaderOnly::Factory Parts(Counters& c) {
  return [&c] {
    std::vector<std::unique_ptr<Component>> parts;
    parts.push_back(std::make_unique<CountingPart>(c));
    return parts;
  };
}

ReplicaOptions Replica(const std::string& name, bool elect = true) {
  ReplicaOptions o;
  o.name = name;
  o.elect = elect;
  o.lease_duration = 600ms;
  return o;
}

TEST(LeaderOnlyTest, WithoutAnElectionThePartsRunFromStart) {
  store::testing::BackendStore store(Backend::kSqlite);
  Counters c;
  LeaderOnly only(store.store(), Parts(c), Replica("solo", /*elect=*/false));
  ASSERT_TRUE(only.Start().ok());
  EXPECT_EQ(c.running.load(), 1);  // at once: no lease to wait for
  EXPECT_TRUE(only.Leading());
  only.Stop();
  EXPECT_EQ(c.running.load(), 0);
}

TEST(LeaderOnlyTest, ReplicaNamesAreCheckedAndDefaulted) {
  EXPECT_TRUE(ValidateReplicaName("host-1:7780").ok());
  EXPECT_FALSE(ValidateReplicaName("").ok());
  EXPECT_FALSE(ValidateReplicaName("a@b").ok());  // '@' separates a lock from its replica
  EXPECT_FALSE(ValidateReplicaName(std::string(129, 'a')).ok());
  EXPECT_TRUE(ValidateReplicaName(DefaultReplicaName(7780)).ok());
  EXPECT_TRUE(DefaultReplicaName(7780).ends_with("-7780"));
  EXPECT_EQ(DefaultReplicaName(7780), DefaultReplicaName(7780));  // kept across restarts
  EXPECT_TRUE(IsSingleReplica(""));
  EXPECT_FALSE(IsSingleReplica("etcd://127.0.0.1:2379"));
}

class LeaderOnlyElectionTest : public ::testing::TestWithParam<Backend> {};

TEST_P(LeaderOnlyElectionTest, OneReplicaRunsThePartsAndAStoppedLeaderHandsOverAtOnce) {
  store::testing::BackendStore store(GetParam());
  Counters c;
  auto a = std::make_unique<LeaderOnly>(store.store(), Parts(c), Replica("warren-a"));
  auto b = std::make_unique<LeaderOnly>(store.store(), Parts(c), Replica("warren-b"));
  ASSERT_TRUE(a->Start().ok());
  ASSERT_TRUE(b->Start().ok());
  ASSERT_TRUE(Eventually([&] { return c.running.load() == 1; }));
  std::this_thread::sleep_for(1s);  // renewals go on: still one
  EXPECT_EQ(c.running.load(), 1);
  EXPECT_NE(a->Leading(), b->Leading());
  // The leader stops (a rolling restart): parts stopped, lease released, the other takes over
  // within a retry period rather than a lease duration.
  auto& leader = a->Leading() ? a : b;
  auto& follower = a->Leading() ? b : a;
  auto before = std::chrono::steady_clock::now();
  leader->Stop();
  ASSERT_TRUE(Eventually([&] { return follower->Leading(); }));
  EXPECT_LT(std::chrono::steady_clock::now() - before, 600ms);
  EXPECT_EQ(c.running.load(), 1);
  follower->Stop();
  EXPECT_EQ(c.running.load(), 0);
  EXPECT_EQ(c.most.load(), 1);
  EXPECT_EQ(c.starts.load(), 2);
}

TEST(LeaderOnlyTest, ALeaderCutOffFromEtcdStopsItsPartsAtTheRenewDeadline) {
  // etcd gone (a partition, as this replica sees it): its store calls fail or hang, and the
  // watchdog stops the parts at the renew deadline (2/3 of the lease), before any other replica
  // could have taken the lease.
  store::testing::BackendStore store(Backend::kEtcd);
  Counters c;
  LeaderOnly only(store.store(), Parts(c), Replica("warren-a"));
  ASSERT_TRUE(only.Start().ok());
  ASSERT_TRUE(Eventually([&] { return c.running.load() == 1; }));
  store.etcd()->Kill(0);
  auto killed = std::chrono::steady_clock::now();
  ASSERT_TRUE(Eventually([&] { return c.running.load() == 0; }));
  EXPECT_LT(std::chrono::steady_clock::now() - killed, 600ms);
  EXPECT_FALSE(only.Leading());
  // etcd back: the lease still names this replica, which takes it again and runs fresh parts.
  store.etcd()->Restart(0);
  ASSERT_TRUE(Eventually([&] { return c.running.load() == 1; }));
  EXPECT_EQ(c.starts.load(), 2);
  only.Stop();
  EXPECT_EQ(c.running.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(, LeaderOnlyElectionTest,
                         ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return store::testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::server
