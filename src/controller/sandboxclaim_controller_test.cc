#include "controller/sandboxclaim_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox_claim.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "store/testing/delivery_gate.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
using testing::Eventually;

class SandboxClaimControllerTest : public testing::PoolControllerTest {
 protected:
  Status StartControllerUnderTest() override { return claims_.Start(); }
  void StopControllerUnderTest() override { claims_.Stop(); }

  api::Object CreateClaim(const std::string& name, api::Json spec) {
    api::Object c;
    c.api_version = api::kAgentsApiVersion;
    c.kind = "SandboxClaim";
    c.metadata.namespace_ = "default";
    c.metadata.name = name;
    c.body["spec"] = std::move(spec);
    auto r = store_->Create(c);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : c;
  }
  std::optional<api::SandboxClaimStatus> ClaimStatus(const std::string& name) {
    auto o = store_->Get(api::SandboxClaimKind(), "default", name);
    if (!o.ok()) return std::nullopt;
    return *api::DecodeStatus<api::SandboxClaimStatus>(*o);
  }
  std::vector<api::Object> WithClaimLabel(const std::string& claim) {
    auto sel = api::LabelSelector::Parse(std::string(labels::kClaimName) + "=" + claim);
    store::ListOptions o;
    o.label_selector = *sel;
    return store_->List(api::SandboxKind(), o)->items;
  }

  SandboxClaimController claims_{*informers_, *claimer_, nullptr};
};

TEST_F(SandboxClaimControllerTest, ClaimsItsReplicasWithItsMetadataAndCompletes) {
  CreatePool("py", 3);
  api::Object c = CreateClaim("job", {{"templateName", "py"},
                                      {"replicas", 2},
                                      {"labels", {{"team", "search"}}},
                                      {"annotations", {{"example.com/purpose", "eval"}}},
                                      {"envVars", {{"MODE", "batch"}}},
                                      {"shutdownTime", "2030-01-01T00:00:00Z"}});
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && st->phase == "Completed";
  }));
  auto st = *ClaimStatus("job");
  EXPECT_EQ(st.claimed_replicas, 2);
  EXPECT_TRUE(st.claim_start_time && st.completion_time);
  EXPECT_TRUE(api::IsConditionTrue(st.conditions, "Completed"));
  auto held = WithClaimLabel("job");
  ASSERT_EQ(held.size(), 2u);
  for (const auto& s : held) {
    EXPECT_EQ(s.metadata.labels.at(labels::kSandboxClaimed), "true");
    EXPECT_EQ(s.metadata.labels.at("team"), "search");
    EXPECT_EQ(s.metadata.annotations.at("example.com/purpose"), "eval");
    ASSERT_EQ(s.metadata.owner_references.size(), 1u);
    EXPECT_EQ(s.metadata.owner_references[0].kind, "SandboxClaim");
    EXPECT_EQ(s.metadata.owner_references[0].uid, c.metadata.uid);
    EXPECT_EQ(s.spec()["shutdownTime"], "2030-01-01T00:00:00Z");
    auto init = api::ParseJson(*testing::TestSecrets().InitRequest(s));
    EXPECT_EQ((*init)["envVars"]["MODE"], "batch");
  }
}

TEST_F(SandboxClaimControllerTest, AClaimThatCannotBeFilledTimesOut) {
  CreatePool("py", 0);
  CreateClaim("job", {{"templateName", "py"},
                      {"replicas", 1},
                      {"createOnNoStock", false},
                      {"claimTimeout", "1s"}});
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && api::IsConditionTrue(st->conditions, "TimedOut");
  }));
  auto st = *ClaimStatus("job");
  EXPECT_EQ(st.phase, "Completed");
  EXPECT_EQ(st.claimed_replicas, 0);
  EXPECT_THAT(st.message, ::testing::HasSubstr("claimed 0 of 1 sandboxes from py"));
}

TEST_F(SandboxClaimControllerTest, TtlAfterCompletedDeletesTheClaimButNotItsSandboxes) {
  CreatePool("py", 2);
  CreateClaim("job", {{"templateName", "py"}, {"replicas", 2}, {"ttlAfterCompleted", "1s"}});
  ASSERT_TRUE(Eventually([&] { return !ClaimStatus("job").has_value(); }));
  auto held = WithClaimLabel("job");
  ASSERT_EQ(held.size(), 2u);
  for (const auto& s : held) {
    EXPECT_FALSE(s.metadata.deletion_timestamp);
    EXPECT_TRUE(s.metadata.owner_references.empty());
  }
}

TEST_F(SandboxClaimControllerTest, ARestartedReconcileNeverClaimsTwice) {
  CreatePool("py", 4);
  CreateClaim("job", {{"templateName", "py"}, {"replicas", 3}});
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && st->phase == "Completed";
  }));
  // As if the status write had been lost: the claim looks unfinished again.
  auto o = store_->Get(api::SandboxClaimKind(), "default", "job");
  o->status() = api::Json::object();
  ASSERT_TRUE(store_->UpdateStatus(*o).ok());
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && st->phase == "Completed" && st->claimed_replicas == 3;
  }));
  EXPECT_EQ(WithClaimLabel("job").size(), 3u);
}

TEST_F(SandboxClaimControllerTest, AMissingPoolIsReportedAsAFailedClaim) {
  CreateClaim("job", {{"templateName", "nope"}, {"replicas", 1}, {"claimTimeout", "2s"}});
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && api::IsConditionTrue(st->conditions, "TimedOut");
  }));
  auto events = store_->List(api::EventKind(), {});
  (void)events;
  EXPECT_EQ(ClaimStatus("job")->claimed_replicas, 0);
}

// The store delivers every watch on one thread: holding it from the claim's first claimed
// sandbox on leaves the sandbox cache behind the claim's own claims for longer than it waits for
// them. The passes that follow must wait for the cache, not count from behind it and claim again.
class SandboxClaimBehindItsCacheTest : public SandboxClaimControllerTest {
 protected:
  Status StartControllerUnderTest() override { return slow_cache_claims_.Start(); }
  void StopControllerUnderTest() override { slow_cache_claims_.Stop(); }

  SandboxClaimController slow_cache_claims_{
      *informers_, *claimer_, nullptr,
      SandboxClaimControllerOptions{
          .initial_batch_size = 2, .max_batch_size = 2, .write_visible_timeout = 100ms}};
};

TEST_F(SandboxClaimBehindItsCacheTest, AClaimNeverHoldsMoreThanItsReplicas) {
  CreatePool("py", 8);
  store::testing::DeliveryGate gate(store_.store(), api::SandboxKind(),
                                    [](const store::WatchEvent& e) {
                                      return e.object->metadata.labels.contains(labels::kClaimName);
                                    });
  CreateClaim("job", {{"templateName", "py"}, {"replicas", 4}, {"createOnNoStock", false}});
  ASSERT_TRUE(gate.WaitHeld(10s));
  std::this_thread::sleep_for(1s);  // ten times what a pass waits for the cache
  EXPECT_EQ(WithClaimLabel("job").size(), 2u) << "the first batch, and no pass since";
  gate.Release();
  ASSERT_TRUE(Eventually([&] {
    auto st = ClaimStatus("job");
    return st && st->phase == "Completed";
  }));
  EXPECT_EQ(ClaimStatus("job")->claimed_replicas, 4);
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(WithClaimLabel("job").size(), 4u);
}

}  // namespace
}  // namespace warren::controller
