#include "controller/pool_hibernator.h"

#include <gtest/gtest.h>

#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_claim.h"
#include "api/types/sandbox_set.h"
#include "controller/claim/pool_index.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "controller/testing/pool_test_node.h"
#include "store/testing/objects.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
namespace labels = api::labels;

class PoolHibernatorTest : public testing::PoolControllerTest {
 protected:
  PoolHibernatorTest() { hibernator_ = std::make_unique<PoolHibernator>(*informers_, nullptr); }
  void SetUp() override {
    PoolControllerTest::SetUp();
    node_->set_follow_pause(true);  // before any member is made, so none is missed
  }
  Status StartControllerUnderTest() override { return hibernator_->Start(); }
  void StopControllerUnderTest() override { hibernator_->Stop(); }

  // A pool whose members pause after `idle_seconds` unclaimed (0: never).
  void CreateIdlePool(const std::string& name, int replicas, int idle_seconds) {
    api::Object set = store::testing::MakeSandboxSet(name, replicas);
    if (idle_seconds > 0) set.spec()["pauseStrategy"] = {{"idleSeconds", idle_seconds}};
    ASSERT_TRUE(store_->Create(std::move(set)).ok());
  }
  std::vector<api::Object> Members(const std::string& pool) {
    std::vector<api::Object> out;
    auto list = store_->List(api::SandboxKind(), {});
    if (!list.ok()) return out;
    for (auto& s : list->items) {
      if (PoolOf(s) == pool && SetOwnerUid(s) != nullptr) out.push_back(s);
    }
    return out;
  }
  api::SandboxSetStatus SetStatus(const std::string& name) {
    auto set = store_->Get(api::SandboxSetKind(), "default", name);
    if (!set.ok()) return {};
    return api::DecodeStatus<api::SandboxSetStatus>(*set).value_or(api::SandboxSetStatus{});
  }
  size_t Hibernated(const std::string& pool) {
    return claimer_->index().Hibernated("default", pool);
  }
  claim::ClaimRequest Request(const std::string& pool) {
    claim::ClaimRequest r;
    r.namespace_ = "default";
    r.pool = pool;
    r.owner = "team-a";
    r.access_token = "tok";
    r.create_on_no_stock = false;
    r.timeout = 10s;
    return r;
  }

  std::unique_ptr<PoolHibernator> hibernator_;
};

TEST_F(PoolHibernatorTest, IdleMembersArePausedAndStayThePoolsStock) {
  CreateIdlePool("idle", 2, 1);
  CreateIdlePool("busy", 1, 0);
  ASSERT_TRUE(Eventually([&] { return Hibernated("idle") == 2; }));
  EXPECT_EQ(claimer_->index().Available("default", "idle"), 0u);
  for (const api::Object& m : Members("idle")) {
    EXPECT_TRUE(m.spec().value("paused", false)) << m.metadata.name;
    EXPECT_EQ(m.status().value("phase", ""), "Paused") << m.metadata.name;
  }
  ASSERT_TRUE(Eventually([&] {
    auto st = SetStatus("idle");
    return st.available_replicas == 2 && st.hibernated_replicas == 2;
  }));
  // Stock, not missing: nothing was made to replace them.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Members("idle").size(), 2u);
  // A pool without idleSeconds keeps running (it has been up for more than a second now).
  ASSERT_EQ(Members("busy").size(), 1u);
  EXPECT_FALSE(Members("busy")[0].spec().value("paused", false));
  EXPECT_EQ(claimer_->index().Available("default", "busy"), 1u);
  EXPECT_EQ(SetStatus("busy").hibernated_replicas, 0);
}

TEST_F(PoolHibernatorTest, AClaimWakesAHibernatedMemberWhenNoneIsRunning) {
  CreateIdlePool("idle", 1, 1);
  ASSERT_TRUE(Eventually([&] { return Hibernated("idle") == 1; }));
  const std::string member = Members("idle").at(0).metadata.name;

  auto r = claimer_->Claim(Request("idle"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->from_pool);
  EXPECT_EQ(r->sandbox.metadata.name, member);
  // Handed over running: the claim's own write unpaused it and it waited for the node.
  EXPECT_FALSE(r->sandbox.spec().value("paused", false));
  EXPECT_TRUE(IsRunningAndReady(r->sandbox));
  auto stored = store_->Get(api::SandboxKind(), "default", member);
  ASSERT_TRUE(stored.ok());
  EXPECT_EQ(stored->metadata.labels.at(labels::kSandboxClaimed), "true");
  EXPECT_FALSE(stored->spec().value("paused", false));
  // The pool refills, and its new member pauses in turn.
  ASSERT_TRUE(Eventually([&] {
    auto members = Members("idle");
    return members.size() == 1 && members[0].metadata.name != member && Hibernated("idle") == 1;
  }));
  // A claimed sandbox is not the hibernator's (the gateway pauses it on its own traffic).
  std::this_thread::sleep_for(1500ms);
  stored = store_->Get(api::SandboxKind(), "default", member);
  ASSERT_TRUE(stored.ok());
  EXPECT_FALSE(stored->spec().value("paused", false));
}

TEST_F(PoolHibernatorTest, AClaimWithAnInPlaceUpdateDoesNotTakeAHibernatedMember) {
  CreateIdlePool("idle", 1, 1);
  ASSERT_TRUE(Eventually([&] { return Hibernated("idle") == 1; }));
  claim::ClaimRequest req = Request("idle");
  api::InplaceUpdateSpec update;
  update.image = "busybox";
  req.inplace_update = update;
  req.timeout = 500ms;
  auto r = claimer_->Claim(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_EQ(Hibernated("idle"), 1u);
}

// The tiers directly: running first, hibernated only when allowed and nothing runs.
TEST(PoolIndexTiersTest, ARunningMemberGoesBeforeAHibernatedOne) {
  store::testing::TempStore store;
  auto selector = api::LabelSelector::Parse(labels::kSandboxPool);
  ASSERT_TRUE(selector.ok());
  Informer sandboxes(
      store.store(),
      Informer::Options{.kind = &api::SandboxKind(), .label_selector = *selector, .name = "tiers"});
  claim::PoolIndex index(sandboxes);
  ASSERT_TRUE(sandboxes.Start().ok());
  // Members need a set that exists (the store collects what a missing owner owned).
  auto set = store->Create(store::testing::MakeSandboxSet("p", 0));
  ASSERT_TRUE(set.ok()) << set.status();
  auto member = [&](const std::string& name, bool paused) {
    api::Object o = store::testing::MakeSandbox(
        name, {{labels::kSandboxPool, "p"}, {labels::kSandboxClaimed, "false"}});
    o.metadata.owner_references.push_back(set->MakeControllerRef());
    if (paused) o.spec()["paused"] = true;
    auto created = store->Create(std::move(o));
    ASSERT_TRUE(created.ok()) << created.status();
    created->status() = {
        {"phase", paused ? "Paused" : "Running"},
        {"conditions", {{{"type", "Ready"}, {"status", paused ? "False" : "True"}}}}};
    auto status = store->UpdateStatus(*created);
    ASSERT_TRUE(status.ok()) << status.status();
  };
  member("asleep", true);
  member("awake", false);
  ASSERT_TRUE(Eventually([&] {
    return index.Available("default", "p") == 1 && index.Hibernated("default", "p") == 1;
  }));
  ObjectPtr first = index.Take("default", "p", "");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->metadata.name, "awake");
  EXPECT_FALSE(index.Take("default", "p", "", /*wake=*/false));
  ObjectPtr second = index.Take("default", "p", "");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->metadata.name, "asleep");
  EXPECT_FALSE(index.Take("default", "p", ""));
  // Given back unchanged: stock again, in its own tier.
  index.Return(second);
  EXPECT_EQ(index.Hibernated("default", "p"), 1u);
  EXPECT_TRUE(index.WaitForStock("default", "p", std::chrono::steady_clock::now()));
  sandboxes.Stop();
}

}  // namespace
}  // namespace warren::controller
