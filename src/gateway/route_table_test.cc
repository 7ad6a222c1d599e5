#include "gateway/route_table.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <thread>

#include "base/testing/fake_clock.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;

Route Running(std::string id, int64_t rv, std::string token = "tok", std::string uid = "u1") {
  Route r;
  r.sandbox_id = std::move(id);
  r.namespace_ = "default";
  r.name = "sbx";
  r.uid = std::move(uid);
  r.state = RouteState::kRunning;
  r.access_token = std::move(token);
  r.resource_version = rv;
  return r;
}

// A relay that only records whether it was cut, and why.
class CountingRelay final : public OpenRelay {
 public:
  void Abort(std::string_view reason) override {
    std::lock_guard lock(mu);
    last_reason = std::string(reason);
    ++aborts;
  }
  std::string reason() {
    std::lock_guard lock(mu);
    return last_reason;
  }
  std::atomic<int> aborts{0};
  std::mutex mu;
  std::string last_reason;  // guarded by mu
};

class RouteTableTest : public ::testing::Test {
 protected:
  base::FakeClock clock_;
  RouteTable table_{clock_, RouteTableOptions{.fence_ttl = 60s}};
};

TEST_F(RouteTableTest, OnlyNewerRevisionsApply) {
  EXPECT_EQ(table_.Upsert(Running("i1", 10)), UpdateResult::kApplied);
  Route paused = Running("i1", 9);
  paused.state = RouteState::kPaused;
  EXPECT_EQ(table_.Upsert(paused), UpdateResult::kStale);
  EXPECT_EQ(table_.Upsert(Running("i1", 10)), UpdateResult::kStale) << "a duplicate";
  EXPECT_EQ(table_.Lookup("i1")->route->state, RouteState::kRunning);
  paused.resource_version = 11;
  EXPECT_EQ(table_.Upsert(paused), UpdateResult::kApplied);
  EXPECT_EQ(table_.Lookup("i1")->route->state, RouteState::kPaused);
  EXPECT_FALSE(table_.Lookup("nope"));
}

TEST_F(RouteTableTest, ADirectUpdateWithoutRevisionAppliesAndKeepsTheKnownRevision) {
  ASSERT_EQ(table_.Upsert(Running("i1", 10)), UpdateResult::kApplied);
  Route direct = Running("i1", 0, "new-token");
  EXPECT_EQ(table_.Upsert(direct), UpdateResult::kApplied);
  auto r = table_.Lookup("i1");
  EXPECT_EQ(r->route->access_token, "new-token");
  EXPECT_EQ(r->route->resource_version, 10);
  // A watch event older than what the table knew stays stale.
  EXPECT_EQ(table_.Upsert(Running("i1", 10, "old-token")), UpdateResult::kStale);
  EXPECT_EQ(table_.Lookup("i1")->route->access_token, "new-token");
}

TEST_F(RouteTableTest, RemovalFencesStaleEventsUntilTheFenceExpires) {
  ASSERT_EQ(table_.Upsert(Running("i1", 10)), UpdateResult::kApplied);
  EXPECT_TRUE(table_.Remove("i1", 15));
  EXPECT_FALSE(table_.Lookup("i1"));
  // A late event from before the deletion does not bring it back...
  EXPECT_EQ(table_.Upsert(Running("i1", 12)), UpdateResult::kFenced);
  EXPECT_EQ(table_.Upsert(Running("i1", 15)), UpdateResult::kFenced);
  EXPECT_FALSE(table_.Lookup("i1"));
  // ...but a newer object with the same id (re-created) does.
  EXPECT_EQ(table_.Upsert(Running("i1", 16, "tok", "u2")), UpdateResult::kApplied);
  EXPECT_EQ(table_.Lookup("i1")->route->uid, "u2");
  EXPECT_EQ(table_.Stats().fences, 0u) << "a route that came back clears its fence";

  EXPECT_TRUE(table_.Remove("i1", 20));
  EXPECT_EQ(table_.Stats().fences, 1u);
  clock_.Advance(61s);
  table_.SweepFences();
  EXPECT_EQ(table_.Stats().fences, 0u);
}

TEST_F(RouteTableTest, RemovalWithoutRevisionFencesTheUidNotTheId) {
  ASSERT_EQ(table_.Upsert(Running("i1", 10, "tok", "u1")), UpdateResult::kApplied);
  EXPECT_TRUE(table_.Remove("i1", 0));
  // The kill path did not know the deletion's revision: a later-numbered event of the same
  // object (a status write that raced the kill) is still refused.
  EXPECT_EQ(table_.Upsert(Running("i1", 14, "tok", "u1")), UpdateResult::kFenced);
  EXPECT_EQ(table_.Upsert(Running("i1", 15, "tok", "u2")), UpdateResult::kApplied);
  // Expired fences let anything through.
  EXPECT_TRUE(table_.Remove("i1", 0));
  clock_.Advance(61s);
  EXPECT_EQ(table_.Upsert(Running("i1", 16, "tok", "u2")), UpdateResult::kApplied);
}

TEST_F(RouteTableTest, StaleRemovalsAreIgnored) {
  ASSERT_EQ(table_.Upsert(Running("i1", 20, "tok", "u2")), UpdateResult::kApplied);
  EXPECT_FALSE(table_.Remove("i1", 18)) << "a deletion older than the route";
  EXPECT_FALSE(table_.Remove("i1", 25, "u1")) << "the deletion of an earlier incarnation";
  EXPECT_TRUE(table_.Lookup("i1"));
  EXPECT_TRUE(table_.Remove("i1", 25, "u2"));
}

TEST_F(RouteTableTest, GoingDownAbortsRelaysAndRefusesLateAttaches) {
  std::vector<std::string> downs;
  table_.SetDownObserver([&](const std::string& id) { downs.push_back(id); });
  ASSERT_EQ(table_.Upsert(Running("i1", 1)), UpdateResult::kApplied);
  ASSERT_EQ(table_.Upsert(Running("i2", 2)), UpdateResult::kApplied);
  auto one = table_.Lookup("i1");
  auto a = std::make_shared<CountingRelay>();
  auto b = std::make_shared<CountingRelay>();
  auto other = std::make_shared<CountingRelay>();
  ASSERT_TRUE(table_.AttachRelay("i1", one->generation, a));
  ASSERT_TRUE(table_.AttachRelay("i1", one->generation, b));
  ASSERT_TRUE(table_.AttachRelay("i2", table_.Lookup("i2")->generation, other));
  EXPECT_EQ(table_.Stats().open_relays, 3u);
  table_.DetachRelay("i1", b.get());  // finished normally
  EXPECT_EQ(table_.Stats().relays_per_sandbox,
            (std::vector<std::pair<std::string, size_t>>{{"i1", 1}, {"i2", 1}}));

  // A metadata-only change keeps relays.
  Route same = Running("i1", 3);
  same.name = "renamed";
  ASSERT_EQ(table_.Upsert(same), UpdateResult::kApplied);
  EXPECT_EQ(a->aborts.load(), 0);
  EXPECT_EQ(table_.Lookup("i1")->generation, one->generation);

  // Pause: relays of i1 are cut, i2's are not, and a relay set up from the old lookup is
  // refused.
  Route paused = Running("i1", 4);
  paused.state = RouteState::kPaused;
  ASSERT_EQ(table_.Upsert(paused), UpdateResult::kApplied);
  EXPECT_EQ(a->aborts.load(), 1);
  EXPECT_EQ(a->reason(), "the sandbox was paused");  // what the gateway's warning says
  EXPECT_EQ(b->aborts.load(), 0);
  EXPECT_EQ(other->aborts.load(), 0);
  EXPECT_EQ(downs, std::vector<std::string>{"i1"});
  EXPECT_FALSE(table_.AttachRelay("i1", one->generation, std::make_shared<CountingRelay>()));
  // Running again: a new generation, so even the old lookup's generation is refused.
  ASSERT_EQ(table_.Upsert(Running("i1", 5)), UpdateResult::kApplied);
  EXPECT_NE(table_.Lookup("i1")->generation, one->generation);
  EXPECT_FALSE(table_.AttachRelay("i1", one->generation, std::make_shared<CountingRelay>()));

  // A new token (the sandbox handed to another claim) cuts relays too.
  auto c = std::make_shared<CountingRelay>();
  ASSERT_TRUE(table_.AttachRelay("i1", table_.Lookup("i1")->generation, c));
  ASSERT_EQ(table_.Upsert(Running("i1", 6, "other-token")), UpdateResult::kApplied);
  EXPECT_EQ(c->aborts.load(), 1);
  EXPECT_EQ(c->reason(), "the sandbox's access token changed");

  // Removal cuts i2's.
  EXPECT_TRUE(table_.Remove("i2", 7));
  EXPECT_EQ(other->aborts.load(), 1);
  EXPECT_EQ(other->reason(), "the sandbox was removed (killed or deleted)");
  EXPECT_EQ(downs, (std::vector<std::string>{"i1", "i1", "i2"}));
  EXPECT_EQ(table_.Stats().open_relays, 0u);
  table_.SetDownObserver(nullptr);
}

TEST_F(RouteTableTest, RemoveAbsentKeepsRoutesNewerThanTheList) {
  ASSERT_EQ(table_.Upsert(Running("kept", 5)), UpdateResult::kApplied);
  ASSERT_EQ(table_.Upsert(Running("vanished", 6)), UpdateResult::kApplied);
  ASSERT_EQ(table_.Upsert(Running("claimed-after-list", 12)), UpdateResult::kApplied);
  EXPECT_EQ(table_.RemoveAbsent({"kept"}, 10), 1u);
  EXPECT_TRUE(table_.Lookup("kept"));
  EXPECT_FALSE(table_.Lookup("vanished"));
  EXPECT_TRUE(table_.Lookup("claimed-after-list"));
  EXPECT_EQ(table_.Upsert(Running("vanished", 9)), UpdateResult::kFenced);
}

TEST_F(RouteTableTest, WaitRunningWakesOnTheUpdate) {
  Route paused = Running("i1", 1);
  paused.state = RouteState::kPaused;
  ASSERT_EQ(table_.Upsert(paused), UpdateResult::kApplied);
  EXPECT_FALSE(table_.WaitRunning("i1", 10ms));
  auto waiter = std::async(std::launch::async, [&] { return table_.WaitRunning("i1", 10s); });
  std::this_thread::sleep_for(20ms);
  ASSERT_EQ(table_.Upsert(Running("i1", 2)), UpdateResult::kApplied);
  auto got = waiter.get();
  ASSERT_TRUE(got);
  EXPECT_EQ(got->route->resource_version, 2);

  // A sandbox killed while a request waits for it to resume ends the wait at once.
  paused.resource_version = 3;
  ASSERT_EQ(table_.Upsert(paused), UpdateResult::kApplied);
  auto start = std::chrono::steady_clock::now();
  auto abandoned = std::async(std::launch::async, [&] { return table_.WaitRunning("i1", 60s); });
  std::this_thread::sleep_for(20ms);
  ASSERT_TRUE(table_.Remove("i1", 4));
  EXPECT_FALSE(abandoned.get());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 30s) << "waited out the timeout";
}

}  // namespace
}  // namespace warren::gateway

namespace warren::gateway {
namespace {

TEST_F(RouteTableTest, ASandboxIsIdleOnlyWithNoRelayOpenForItsWholeIdleTime) {
  Route r = Running("i1", 1);
  r.idle_pause_seconds = 10;
  ASSERT_EQ(table_.Upsert(r), UpdateResult::kApplied);
  ASSERT_EQ(table_.Upsert(Running("i2", 1)), UpdateResult::kApplied);  // no idle policy
  clock_.Advance(9s);
  EXPECT_TRUE(table_.IdleRoutes().empty());
  clock_.Advance(1s);
  ASSERT_EQ(table_.IdleRoutes().size(), 1u);
  EXPECT_EQ(table_.IdleRoutes()[0].sandbox_id, "i1");

  // A relay open for longer than the idle time keeps it busy; its end restarts the count.
  auto relay = std::make_shared<CountingRelay>();
  ASSERT_TRUE(table_.AttachRelay("i1", table_.Lookup("i1")->generation, relay));
  clock_.Advance(60s);
  EXPECT_TRUE(table_.IdleRoutes().empty());
  table_.DetachRelay("i1", relay.get());
  clock_.Advance(9s);
  EXPECT_TRUE(table_.IdleRoutes().empty());
  clock_.Advance(1s);
  EXPECT_EQ(table_.IdleRoutes().size(), 1u);

  // Paused, then resumed: idle again only a whole idle time after it runs again.
  Route paused = r;
  paused.resource_version = 2;
  paused.state = RouteState::kPaused;
  ASSERT_EQ(table_.Upsert(paused), UpdateResult::kApplied);
  EXPECT_TRUE(table_.IdleRoutes().empty());
  clock_.Advance(100s);
  Route resumed = r;
  resumed.resource_version = 3;
  ASSERT_EQ(table_.Upsert(resumed), UpdateResult::kApplied);
  EXPECT_TRUE(table_.IdleRoutes().empty());
  clock_.Advance(10s);
  EXPECT_EQ(table_.IdleRoutes().size(), 1u);
}

}  // namespace
}  // namespace warren::gateway
