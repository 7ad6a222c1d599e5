#include "controller/sandboxset_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <set>
#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_set.h"
#include "base/ids.h"
#include "base/testing/fake_clock.h"
#include "controller/node_lifecycle_controller.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "controller/testing/pool_test_node.h"
#include "controller/testing/test_nodes.h"
#include "obs/metrics.h"
#include "store/testing/delivery_gate.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
using testing::Eventually;

class SandboxSetControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    informers_ = std::make_unique<PoolInformers>(store_.store(), testing::TestSecrets());
    recorder_ = std::make_unique<obs::EventRecorder>(
        store_.store(), obs::EventRecorder::Options{.component = "sandboxset-controller"});
    controller_ =
        std::make_unique<SandboxSetController>(*informers_, recorder_.get(), ControllerOptions());
    ASSERT_TRUE(informers_->Start().ok());
    ASSERT_TRUE(controller_->Start().ok());
    node_ = std::make_unique<testing::PoolTestNode>(store_.store());
  }
  void TearDown() override {
    controller_->Stop();
    informers_->Stop();
    node_.reset();
  }
  virtual SandboxSetControllerOptions ControllerOptions() { return {}; }

  api::Object CreateSet(const std::string& name, int replicas) {
    auto created = store_->Create(store::testing::MakeSandboxSet(name, replicas));
    EXPECT_TRUE(created.ok()) << created.status();
    return *created;
  }
  void PatchSet(const std::string& name, api::Json patch) {
    auto r = store_->Patch(api::SandboxSetKind(), "default", name, patch);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  std::vector<api::Object> Sandboxes() {
    auto list = store_->List(api::SandboxKind(), {});
    EXPECT_TRUE(list.ok());
    return list->items;
  }
  // Live (not deleting) members still owned by the set.
  std::vector<api::Object> Members(const std::string& set) {
    std::vector<api::Object> out;
    for (auto& s : Sandboxes()) {
      const api::OwnerReference* ref = s.ControllerRef();
      if (ref && ref->name == set && !s.metadata.deletion_timestamp) out.push_back(s);
    }
    return out;
  }
  int AvailableMembers(const std::string& set) {
    int n = 0;
    for (auto& m : Members(set)) n += ClassifyMember(m) == MemberState::kAvailable;
    return n;
  }
  api::SandboxSetStatus Status(const std::string& set) {
    auto o = store_->Get(api::SandboxSetKind(), "default", set);
    EXPECT_TRUE(o.ok());
    return *api::DecodeStatus<api::SandboxSetStatus>(*o);
  }
  // What a claim does: one CAS detaching the member from its pool.
  warren::Status Claim(api::Object member) {
    member.metadata.owner_references.clear();
    member.metadata.labels[labels::kSandboxClaimed] = "true";
    member.metadata.annotations[api::annotations::kOwner] = "test";
    return store_->Update(std::move(member)).status();
  }
  bool FullAndReady(const std::string& set, int replicas) {
    if (static_cast<int>(Members(set).size()) != replicas) return false;
    if (AvailableMembers(set) != replicas) return false;
    auto st = Status(set);
    return st.available_replicas == replicas && st.replicas == replicas;
  }

  store::testing::TempStore store_;
  std::unique_ptr<PoolInformers> informers_;
  std::unique_ptr<obs::EventRecorder> recorder_;
  std::unique_ptr<SandboxSetController> controller_;
  std::unique_ptr<testing::PoolTestNode> node_;
};

TEST_F(SandboxSetControllerTest, FillsThePoolWithLabelledOwnedMembersAndReportsStatus) {
  api::Object set = CreateSet("py", 5);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 5); }));
  auto st = Status("py");
  EXPECT_EQ(st.updated_replicas, 5);
  EXPECT_EQ(st.updated_available_replicas, 5);
  EXPECT_EQ(st.observed_generation, set.metadata.generation);
  EXPECT_EQ(st.selector, "agents.kruise.io/sandbox-pool=py,agents.kruise.io/sandbox-claimed=false");
  EXPECT_EQ(st.update_revision.size(), 8u);
  EXPECT_EQ(st.current_revision, "py-" + st.update_revision);
  EXPECT_TRUE(api::IsConditionTrue(st.conditions, "Ready"));

  // The revision is materialized as a SandboxTemplate owned by the set.
  auto t = store_->Get(api::SandboxTemplateKind(), "default", st.current_revision);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_NE(t->ControllerRef(), nullptr);
  EXPECT_EQ(t->ControllerRef()->uid, set.metadata.uid);
  EXPECT_EQ(t->spec()["template"], set.spec()["template"]);

  std::set<std::string> ids;
  for (const auto& m : Members("py")) {
    EXPECT_EQ(m.metadata.labels.at(labels::kSandboxPool), "py");
    EXPECT_EQ(m.metadata.labels.at(labels::kSandboxClaimed), "false");
    EXPECT_EQ(m.metadata.labels.at(labels::kTemplateHash), st.update_revision);
    std::string id = m.metadata.labels.at(labels::kSandboxId);
    EXPECT_TRUE(base::IsValidSandboxId(id)) << id;
    EXPECT_EQ(m.metadata.annotations.at(api::annotations::kSandboxId), id);
    ids.insert(id);
    EXPECT_EQ(m.spec()["templateRef"]["name"], st.current_revision);
    EXPECT_EQ(m.metadata.name.rfind("py-", 0), 0u);
  }
  EXPECT_EQ(ids.size(), 5u);
}

TEST_F(SandboxSetControllerTest, RefillsAfterClaimsAndLeavesClaimedSandboxesAlone) {
  CreateSet("py", 4);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 4); }));
  auto members = Members("py");
  std::set<std::string> claimed;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(Claim(members[i]).ok());
    claimed.insert(members[i].metadata.name);
  }
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 4); }));
  for (const auto& m : Members("py")) EXPECT_FALSE(claimed.contains(m.metadata.name));
  for (const auto& name : claimed) {
    auto s = store_->Get(api::SandboxKind(), "default", name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_FALSE(s->metadata.deletion_timestamp);
    EXPECT_EQ(s->metadata.labels.at(labels::kSandboxClaimed), "true");
  }
  EXPECT_EQ(Sandboxes().size(), 7u);
}

// A controller whose refills wait for 2 s without claims (at most 20 s).
class SandboxSetRefillTest : public SandboxSetControllerTest {
  SandboxSetControllerOptions ControllerOptions() override {
    return {.refill_quiet = std::chrono::milliseconds(2000),
            .refill_max_delay = std::chrono::milliseconds(20000)};
  }
};

TEST_F(SandboxSetRefillTest, RefillsWaitForABurstOfClaimsToPause) {
  CreateSet("py", 4);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 4); }));
  auto members = Members("py");
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Claim(members[i]).ok());
  // Right after the burst nothing is being created yet...
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Members("py").size(), 1u);
  // ...and once the claims have paused, the pool refills.
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 4); }));
}

// Claims that go on for longer than the refill's 200 ms limit (each within 3 s of the last).
class SandboxSetRefillTrickleTest : public SandboxSetControllerTest {
  SandboxSetControllerOptions ControllerOptions() override {
    return {.refill_quiet = std::chrono::milliseconds(3000),
            .refill_max_delay = std::chrono::milliseconds(200),
            .refills_while_claiming = 1};
  }
};

TEST_F(SandboxSetRefillTrickleTest, RefillsTrickleWhileClaimsGoOnAndCatchUpWhenTheyPause) {
  CreateSet("py", 6);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 6); }));
  node_->set_hold(true);  // what the refill makes stays Creating
  auto members = Members("py");
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(Claim(members[i]).ok());
    std::this_thread::sleep_for(150ms);
  }
  // Past the limit one member is made, and no second one while it is still Creating...
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 3u; }, 2s));
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Members("py").size(), 3u);
  // ...the next once it is Ready, the claims still going on.
  node_->ReadyAll();
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 4u; }, 2s));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Members("py").size(), 4u);
  // Once they pause, the rest at once.
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 6u; }, 10s));
  node_->set_hold(false);
  node_->ReadyAll();
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 6); }));
}

class SandboxSetClaimStatusTest : public SandboxSetControllerTest {
  SandboxSetControllerOptions ControllerOptions() override {
    return {.refill_quiet = std::chrono::milliseconds(5000),
            .refill_max_delay = std::chrono::milliseconds(20000),
            .claim_status_interval = std::chrono::milliseconds(3000)};
  }
};

TEST_F(SandboxSetClaimStatusTest, ABurstOfClaimsIsCountedInOneStatusWriteSoonAfter) {
  CreateSet("py", 6);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 6); }));
  auto members = Members("py");
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(Claim(members[i]).ok());
  // The status was written a moment ago (the pool filled): the claims' counts wait...
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(Status("py").available_replicas, 6);
  // ...and go out together within the interval, before any refill starts.
  ASSERT_TRUE(Eventually([&] { return Status("py").available_replicas == 1; }));
  EXPECT_EQ(Members("py").size(), 1u);
  // The last member claimed: an empty pool is said at once, interval or not.
  ASSERT_TRUE(Claim(Members("py").at(0)).ok());
  ASSERT_TRUE(Eventually([&] { return Status("py").available_replicas == 0; }, 1500ms));
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 6); }, 30s));
}

TEST_F(SandboxSetControllerTest, ScaleDownNeverDeletesAMemberClaimedMeanwhile) {
  // Claims race the scale-down many times over; every claim that succeeded must survive.
  std::mt19937 rng(42);
  for (int round = 0; round < 8; ++round) {
    std::string name = "race" + std::to_string(round);
    CreateSet(name, 12);
    ASSERT_TRUE(Eventually([&] { return FullAndReady(name, 12); })) << round;
    auto members = Members(name);
    std::shuffle(members.begin(), members.end(), rng);
    std::vector<std::string> won;
    std::thread claimer([&] {
      for (auto& m : members) {
        if (Claim(m).ok()) won.push_back(m.metadata.name);
      }
    });
    PatchSet(name, {{"spec", {{"replicas", 0}}}});
    claimer.join();
    ASSERT_TRUE(Eventually([&] { return Members(name).empty(); })) << round;
    for (const auto& n : won) {
      auto s = store_->Get(api::SandboxKind(), "default", n);
      ASSERT_TRUE(s.ok()) << "claimed sandbox " << n << " was deleted in round " << round;
      EXPECT_FALSE(s->metadata.deletion_timestamp) << n;
    }
  }
}

TEST_F(SandboxSetControllerTest, ScaleDownPrefersPendingThenOldest) {
  CreateSet("py", 3);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 3); }));
  auto ready = Members("py");
  node_->set_hold(true);
  PatchSet("py", {{"spec", {{"replicas", 5}}}});
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 5; }));
  PatchSet("py", {{"spec", {{"replicas", 3}}}});
  // The two pending ones go; the three ready ones stay.
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 3; }));
  std::set<std::string> left;
  for (auto& m : Members("py")) left.insert(m.metadata.name);
  for (auto& m : ready) EXPECT_TRUE(left.contains(m.metadata.name)) << m.metadata.name;
}

TEST_F(SandboxSetControllerTest, RollingUpdateReplacesOnlyUnclaimedMembers) {
  CreateSet("py", 5);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 5); }));
  std::string old_hash = Status("py").update_revision;
  auto members = Members("py");
  std::map<std::string, int64_t> claimed;  // name → version after the claim
  for (int i = 0; i < 2; ++i) {
    ASSERT_TRUE(Claim(members[i]).ok());
    auto s = store_->Get(api::SandboxKind(), "default", members[i].metadata.name);
    claimed[s->metadata.name] = s->metadata.resource_version;
  }
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 5); }));
  PatchSet(
      "py",
      {{"spec",
        {{"template", {{"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}}}}}});
  std::string new_hash;
  ASSERT_TRUE(Eventually([&] {
    auto st = Status("py");
    new_hash = st.update_revision;
    return new_hash != old_hash && st.updated_available_replicas == 5 && FullAndReady("py", 5);
  }));
  for (const auto& m : Members("py")) {
    EXPECT_EQ(m.metadata.labels.at(labels::kTemplateHash), new_hash);
    EXPECT_EQ(m.spec()["templateRef"]["name"], "py-" + new_hash);
  }
  // Claimed sandboxes were not touched: same version, old template.
  for (const auto& [name, version] : claimed) {
    auto s = store_->Get(api::SandboxKind(), "default", name);
    ASSERT_TRUE(s.ok()) << name;
    EXPECT_EQ(s->metadata.resource_version, version) << name;
    EXPECT_EQ(s->metadata.labels.at(labels::kTemplateHash), old_hash);
  }
  // The old revision's template stays while claimed sandboxes run from it.
  EXPECT_TRUE(store_->Get(api::SandboxTemplateKind(), "default", "py-" + old_hash).ok());
}

TEST_F(SandboxSetControllerTest, RollingUpdateStaysWithinMaxUnavailable) {
  CreateSet("py", 10);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 10); }));
  node_->set_hold(true);  // replacements stay Creating: the update must stall at the budget
  PatchSet(
      "py",
      {{"spec",
        {{"updateStrategy", {{"maxUnavailable", "20%"}}},
         {"template", {{"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}}}}}});
  ASSERT_TRUE(Eventually([&] { return Status("py").updated_replicas == 2; }));
  std::this_thread::sleep_for(300ms);
  auto st = Status("py");
  EXPECT_EQ(st.updated_replicas, 2);  // 20% of 10
  EXPECT_EQ(st.available_replicas, 8);
  node_->set_hold(false);
  node_->ReadyAll();
  ASSERT_TRUE(Eventually([&] { return Status("py").updated_available_replicas == 10; }));
}

TEST_F(SandboxSetControllerTest, ScaleStrategyBoundsMembersCreatingAtOnce) {
  node_->set_hold(true);
  api::Object set = store::testing::MakeSandboxSet("py", 6);
  set.spec()["scaleStrategy"] = {{"maxUnavailable", 2}};
  ASSERT_TRUE(store_->Create(set).ok());
  ASSERT_TRUE(Eventually([&] { return Members("py").size() == 2; }));
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(Members("py").size(), 2u);
  node_->set_hold(false);
  node_->ReadyAll();
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 6); }));
}

TEST_F(SandboxSetControllerTest, DeadMembersAreReplaced) {
  CreateSet("py", 3);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 3); }));
  std::string victim = Members("py")[0].metadata.name;
  node_->Fail("default", victim);
  ASSERT_TRUE(Eventually([&] {
    return !store_->Get(api::SandboxKind(), "default", victim).ok() && FullAndReady("py", 3);
  }));
}

TEST_F(SandboxSetControllerTest, MembersLostWithTheirNodeAreReplacedWhileTheirFinalizerHolds) {
  // The members' node (PoolTestNode writes nodeName test-node) heartbeats, then stops.
  base::FakeClock clock;
  testing::PutNode(store_.store(), {.name = "test-node", .heartbeat = clock.Now()});
  NodeLifecycleController lifecycle(store_.store(), clock, recorder_.get(), {.period = 10ms});
  ASSERT_TRUE(lifecycle.Start().ok());
  CreateSet("py", 3);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 3); }));
  std::set<std::string> lost;
  for (const auto& m : Members("py")) lost.insert(m.metadata.name);
  for (const auto& name : lost) {
    // The node agent's finalizer, which nobody removes while the node is gone. Read again on a
    // conflict: the stand-in node and the set controller write members too.
    ASSERT_TRUE(Eventually([&] {
      auto m = store_->Get(api::SandboxKind(), "default", name);
      if (!m.ok()) return false;
      m->AddFinalizer("agents.kruise.io/sandbox");
      return store_->Update(*m).ok();
    })) << name;
  }
  clock.Advance(10s);
  lifecycle.Kick();
  // Each lost member is marked Failed and deleted. The node lifecycle controller then releases
  // a deleted member of a lost node, so one already gone has passed that state (a loaded host
  // can run both before this looks).
  ASSERT_TRUE(Eventually([&] {
    for (const auto& name : lost) {
      auto o = store_->Get(api::SandboxKind(), "default", name);
      if (!o.ok() && o.status().code() == StatusCode::kNotFound) continue;
      if (!o.ok() || !o->metadata.deletion_timestamp) return false;
      if (o->status().value("phase", "") != "Failed") return false;
    }
    return true;
  }));
  // The node renews: the replacements stay, and the pool is full again without the lost ones.
  testing::RenewNode(store_.store(), "test-node", clock.Now());
  ASSERT_TRUE(Eventually([&] {
    if (!FullAndReady("py", 3)) return false;
    for (const auto& m : Members("py")) {
      if (lost.contains(m.metadata.name)) return false;
    }
    return true;
  }));
  lifecycle.Stop();
}

TEST_F(SandboxSetControllerTest, KeepsTheLastTenRevisions) {
  CreateSet("py", 1);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 1); }));
  for (int i = 0; i < 12; ++i) {
    PatchSet("py", {{"spec",
                     {{"template",
                       {{"spec",
                         {{"containers",
                           {{{"name", "main"},
                             {"image", "base"},
                             {"env", {{{"name", "V"}, {"value", std::to_string(i)}}}}}}}}}}}}}});
    std::string hash;
    ASSERT_TRUE(Eventually([&] {
      auto st = Status("py");
      return st.updated_available_replicas == 1 && st.observed_generation == i + 2;
    }));
  }
  ASSERT_TRUE(Eventually([&] {
    auto list = store_->List(api::SandboxTemplateKind(), {});
    return list.ok() && list->items.size() == 10;
  }));
}

TEST_F(SandboxSetControllerTest, MissingTemplateRefIsReportedThenFilledWhenItAppears) {
  api::Object set = store::testing::MakeSandboxSet("py", 2);
  set.spec().erase("template");
  set.spec()["templateRef"] = {{"name", "shared"}};
  ASSERT_TRUE(store_->Create(set).ok());
  ASSERT_TRUE(Eventually([&] {
    auto st = Status("py");
    auto c = api::FindCondition(st.conditions, "ReplicaFailure");
    return c != nullptr && c->reason == "TemplateNotFound";
  }));
  EXPECT_TRUE(Members("py").empty());
  api::Object t;
  t.api_version = api::kAgentsApiVersion;
  t.kind = "SandboxTemplate";
  t.metadata.namespace_ = "default";
  t.metadata.name = "shared";
  t.spec()["template"] = {{"spec", {{"containers", {{{"name", "main"}, {"image", "base"}}}}}}};
  ASSERT_TRUE(store_->Create(t).ok());
  ASSERT_TRUE(Eventually([&] { return FullAndReady("py", 2); }));
  EXPECT_EQ(api::FindCondition(Status("py").conditions, "ReplicaFailure"), nullptr);
}

TEST_F(SandboxSetControllerTest, ASetOfASnapshotsTemplateStartsEveryMemberOnTheSnapshot) {
  api::Object t;
  t.api_version = api::kAgentsApiVersion;
  t.kind = "SandboxTemplate";
  t.metadata.namespace_ = "default";
  t.metadata.name = "snap";
  t.metadata.annotations[api::annotations::kRestoreFrom] = "cp-one";
  t.spec()["template"] = {{"spec", {{"containers", {{{"name", "main"}, {"image", "base"}}}}}}};
  ASSERT_TRUE(store_->Create(t).ok());
  api::Object set = store::testing::MakeSandboxSet("from-snap", 2);
  set.spec().erase("template");
  set.spec()["templateRef"] = {{"name", "snap"}};
  ASSERT_TRUE(store_->Create(set).ok());
  ASSERT_TRUE(Eventually([&] { return FullAndReady("from-snap", 2); }));
  std::string hash;
  for (const auto& m : Members("from-snap")) {
    EXPECT_EQ(m.metadata.annotations.at(api::annotations::kRestoreFrom), "cp-one");
    hash = m.metadata.labels.at(labels::kTemplateHash);
  }
  // Another snapshot behind the same template: a new revision, and the pool rolls onto it.
  auto tpl = store_->Get(api::SandboxTemplateKind(), "default", "snap").value();
  tpl.metadata.annotations[api::annotations::kRestoreFrom] = "cp-two";
  ASSERT_TRUE(store_->Update(tpl).ok());
  ASSERT_TRUE(Eventually([&] {
    auto members = Members("from-snap");
    if (members.size() != 2 || AvailableMembers("from-snap") != 2) return false;
    for (const auto& m : members) {
      if (m.metadata.annotations.at(api::annotations::kRestoreFrom) != "cp-two") return false;
      if (m.metadata.labels.at(labels::kTemplateHash) == hash) return false;
    }
    return true;
  }));
}

TEST_F(SandboxSetControllerTest, PoolGaugesFollowTheSetAndVanishWithIt) {
  CreateSet("gauged", 3);
  ASSERT_TRUE(Eventually([&] { return FullAndReady("gauged", 3); }));
  auto has = [](const std::string& line) {
    return obs::Metrics::Default().Exposition().find(line) != std::string::npos;
  };
  EXPECT_TRUE(Eventually([&] {
    return has(
        "sandboxset_available_replicas{source=\"k8s\",name=\"gauged\",namespace=\"default\"} 3");
  }));
  EXPECT_TRUE(
      has("sandboxset_desired_replicas{source=\"k8s\",name=\"gauged\",namespace=\"default\"} 3"));
  ASSERT_TRUE(store_->Delete(api::SandboxSetKind(), "default", "gauged").ok());
  EXPECT_TRUE(Eventually([&] { return !has("name=\"gauged\""); }));
  // Its members go with it (owner references).
  EXPECT_TRUE(Eventually([&] { return Sandboxes().empty(); }));
}

// The store delivers every watch on one thread: holding it from the first member's creation on
// leaves the set's member counts behind its own creates for longer than it waits for them. The
// passes that follow (the held event requeues the set) must wait, not create the rest again.
class SandboxSetBehindItsCacheTest : public SandboxSetControllerTest {
 protected:
  SandboxSetControllerOptions ControllerOptions() override {
    SandboxSetControllerOptions o;
    o.write_visible_timeout = 100ms;
    return o;
  }
};

TEST_F(SandboxSetBehindItsCacheTest, ASetNeverCreatesBeyondItsReplicas) {
  store::testing::DeliveryGate gate(
      store_.store(), api::SandboxKind(),
      [](const store::WatchEvent& e) { return e.type == store::EventType::kAdded; });
  CreateSet("pool", 10);
  ASSERT_TRUE(gate.WaitHeld(10s));
  std::this_thread::sleep_for(1s);  // ten times what a pass waits for the cache
  EXPECT_EQ(Sandboxes().size(), 10u);
  gate.Release();
  ASSERT_TRUE(Eventually([&] { return AvailableMembers("pool") == 10; }));
  EXPECT_EQ(Sandboxes().size(), 10u);
}

// Here the deletes' resourceVersion preconditions guard too: a stale pass picks members already
// deleting, and the store refuses.
TEST_F(SandboxSetBehindItsCacheTest, ASetNeverDeletesBeyondItsScaleDown) {
  CreateSet("pool", 10);
  ASSERT_TRUE(Eventually([&] { return AvailableMembers("pool") == 10; }));
  store::testing::DeliveryGate gate(store_.store(), api::SandboxKind(),
                                    [](const store::WatchEvent& e) {
                                      return e.object->metadata.deletion_timestamp.has_value() ||
                                             e.type == store::EventType::kDeleted;
                                    });
  PatchSet("pool", {{"spec", {{"replicas", 6}}}});
  ASSERT_TRUE(gate.WaitHeld(10s));
  std::this_thread::sleep_for(1s);
  EXPECT_EQ(Members("pool").size(), 6u);
  gate.Release();
  ASSERT_TRUE(Eventually([&] { return AvailableMembers("pool") == 6; }));
  EXPECT_EQ(Members("pool").size(), 6u);
}

}  // namespace
}  // namespace warren::controller
