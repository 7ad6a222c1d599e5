#include "controller/pool_autoscaler_controller.h"

#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/pool_autoscaler.h"
#include "api/types/sandbox_set.h"
#include "api/yaml_codec.h"
#include "base/testing/fake_clock.h"
#include "base/time_format.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "obs/event_recorder.h"
#include "store/testing/objects.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;

// A real store, SandboxSet controller and claimer (PoolControllerTest), and the autoscaler on a
// fake clock whose passes the test runs itself (Tick), so windows of minutes take no time.
class PoolAutoscalerControllerTest : public testing::PoolControllerTest {
 protected:
  warren::Status StartControllerUnderTest() override {
    return autoscaler_.Start(/*run_worker=*/false);
  }
  void StopControllerUnderTest() override { autoscaler_.Stop(); }

  void CreateAutoscaler(const std::string& name, const std::string& spec_yaml) {
    auto doc = api::ParseYaml(
        "apiVersion: agents.kruise.io/v1alpha1\nkind: PoolAutoscaler\nmetadata: {name: " + name +
        ", namespace: default}\nspec:\n" + spec_yaml);
    ASSERT_TRUE(doc.ok()) << doc.status();
    auto obj = api::ObjectFromJson(*doc);
    ASSERT_TRUE(obj.ok());
    auto created = store_->Create(*obj);
    ASSERT_TRUE(created.ok()) << created.status();
  }
  // Runs a pass once the caches have every write made so far.
  void Tick() {
    ASSERT_TRUE(autoscaler_.WaitForCaches(5s));
    autoscaler_.Tick();
  }
  int32_t SpecReplicas(const std::string& set) {
    auto o = store_->Get(api::SandboxSetKind(), "default", set);
    return api::DecodeSpec<api::SandboxSetSpec>(*o)->replicas.value_or(-1);
  }
  api::SandboxSetStatus SetStatus(const std::string& set) {
    auto o = store_->Get(api::SandboxSetKind(), "default", set);
    return *api::DecodeStatus<api::SandboxSetStatus>(*o);
  }
  api::PoolAutoscalerStatus StatusOf(const std::string& name) {
    auto o = store_->Get(api::PoolAutoscalerKind(), "default", name);
    return *api::DecodeStatus<api::PoolAutoscalerStatus>(*o);
  }
  std::string Condition(const std::string& name, std::string_view type) {
    auto s = StatusOf(name);
    const api::Condition* c = api::FindCondition(s.conditions, type);
    return c ? c->status + "/" + c->reason : "none";
  }
  std::vector<std::string> EventMessages(std::string_view reason) {
    std::vector<std::string> out;
    auto events = store_->List(api::EventKind(), {});
    for (const auto& e : events->items) {
      if (e.body.value("reason", "") == reason) out.push_back(e.body.value("message", ""));
    }
    return out;
  }
  void Claim(const std::string& pool, int n) {
    for (int i = 0; i < n; ++i) {
      claim::ClaimRequest req;
      req.namespace_ = "default";
      req.pool = pool;
      req.owner = "alice";
      req.access_token = "alice-token";
      auto r = claimer_->Claim(req);
      ASSERT_TRUE(r.ok()) << r.status();
    }
  }

  base::FakeClock clock_{*base::ParseRfc3339("2030-06-03T06:59:30Z")};
  store::Store& store_ref_ = store_.store();
  obs::EventRecorder events_{store_ref_, {.component = "poolautoscaler-controller"}, clock_};
  PoolAutoscalerController autoscaler_{store_ref_, &events_, clock_};
};

TEST_F(PoolAutoscalerControllerTest, ScalesUpWhenMembersAreClaimedAndDownAfterTheWindow) {
  CreatePool("pool", 3);
  CreateAutoscaler("pas", R"(
  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  capacityPolicy:
    targetAvailable: 3
    tolerance: 1
    scaleDown: {stabilizationWindowSeconds: 60}
)");
  // Every member claimed while the node holds their replacements back: none available.
  node_->set_hold(true);
  Claim("pool", 3);
  ASSERT_TRUE(Eventually([&] {
    auto s = SetStatus("pool");
    return s.available_replicas == 0 && s.replicas == 3;
  }));
  clock_.Advance(5s);
  Tick();
  // 0 available against a target of 3 (band 2..4): 3 members creating + 3 more.
  EXPECT_EQ(SpecReplicas("pool"), 6);
  auto status = StatusOf("pas");
  EXPECT_EQ(status.desired_replicas, 6);
  EXPECT_TRUE(status.last_scale_time);
  EXPECT_EQ(Condition("pas", "ScalingActive"), "True/ValidPolicy");
  EXPECT_EQ(Condition("pas", "ScalingLimited"), "False/DesiredWithinRange");
  auto rescaled = EventMessages("SuccessfulRescale");
  ASSERT_EQ(rescaled.size(), 1u);
  EXPECT_NE(rescaled[0].find("New size: 6 (from 3); capacity: available 0 below the low "
                             "watermark 2 (target 3)"),
            std::string::npos)
      << rescaled[0];

  // The members become available: 6 > 4, but the scale-down waits out its 60 s window.
  node_->set_hold(false);
  node_->ReadyAll();
  ASSERT_TRUE(Eventually([&] { return SetStatus("pool").available_replicas == 6; }));
  for (int i = 0; i < 6; ++i) {
    clock_.Advance(5s);
    Tick();
  }
  EXPECT_EQ(SpecReplicas("pool"), 6);
  EXPECT_EQ(Condition("pas", "AbleToScale"), "True/ScaleDownStabilized");
  for (int i = 0; i < 5; ++i) {
    clock_.Advance(5s);
    Tick();
  }
  EXPECT_EQ(SpecReplicas("pool"), 6) << "scaled down before the window";
  clock_.Advance(5s);  // 60 s after the scale-up
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 3);
  EXPECT_EQ(StatusOf("pas").desired_replicas, 3);
  EXPECT_EQ(EventMessages("SuccessfulRescale").size(), 2u);
}

TEST_F(PoolAutoscalerControllerTest, ACronWindowSetsReplicasAtItsTime) {
  CreatePool("pool", 1);
  // 09:00 in Berlin (CEST, +2) is 07:00 UTC; the fake clock starts at 06:59:30 UTC.
  CreateAutoscaler("pas", R"(
  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 8
  cronPolicies:
  - {name: morning, schedule: "0 9 * * *", timeZone: Europe/Berlin, targetReplicas: 5}
  - {name: evening, schedule: "0 18 * * *", timeZone: Europe/Berlin, targetReplicas: 1}
)");
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 1);
  clock_.Advance(25s);
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 1) << "fired early";
  clock_.Advance(10s);  // 07:00:05 UTC
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 5);
  auto status = StatusOf("pas");
  ASSERT_EQ(status.applied_cron_policies.size(), 2u);
  EXPECT_EQ(status.applied_cron_policies[0].name, "morning");
  ASSERT_TRUE(status.applied_cron_policies[0].last_schedule_time);
  EXPECT_EQ(base::FormatRfc3339(*status.applied_cron_policies[0].last_schedule_time),
            "2030-06-03T07:00:00Z");
  EXPECT_FALSE(status.applied_cron_policies[1].last_schedule_time);
  auto rescaled = EventMessages("SuccessfulRescale");
  ASSERT_EQ(rescaled.size(), 1u);
  EXPECT_NE(rescaled[0].find("cron policy \"morning\" fired at 2030-06-03T07:00:00Z"),
            std::string::npos)
      << rescaled[0];
  // The window holds: someone scaling the set down by hand is put back to 5.
  ASSERT_TRUE(
      store_
          ->Patch(api::SandboxSetKind(), "default", "pool", api::Json{{"spec", {{"replicas", 2}}}})
          .ok());
  clock_.Advance(5s);
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 5);
  // 18:00 Berlin: the evening window.
  clock_.Advance(9h);
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 1);
}

TEST_F(PoolAutoscalerControllerTest, SuspendedConflictingAndMissingTargetsDoNotScale) {
  CreatePool("pool", 2);
  CreateAutoscaler("first",
                   "  scaleTargetRef: {kind: SandboxSet, name: pool}\n  minReplicas: 4\n"
                   "  maxReplicas: 8\n  suspend: true\n");
  CreateAutoscaler("second",
                   "  scaleTargetRef: {kind: SandboxSet, name: pool}\n"
                   "  minReplicas: 5\n  maxReplicas: 8\n");
  CreateAutoscaler("lost",
                   "  scaleTargetRef: {kind: SandboxSet, name: nothing}\n"
                   "  maxReplicas: 8\n");
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 2);
  EXPECT_TRUE(StatusOf("first").suspended);
  EXPECT_EQ(Condition("first", "ScalingActive"), "False/Suspended");
  EXPECT_EQ(Condition("second", "ScalingActive"), "False/ConflictingAutoscaler");
  EXPECT_EQ(Condition("lost", "AbleToScale"), "False/FailedGetScale");
  EXPECT_EQ(EventMessages("FailedGetScale").size(), 1u);
  // Resumed, the oldest acts: minReplicas 4 lifts the pool.
  ASSERT_TRUE(store_
                  ->Patch(api::PoolAutoscalerKind(), "default", "first",
                          api::Json{{"spec", {{"suspend", false}}}})
                  .ok());
  clock_.Advance(5s);
  Tick();
  EXPECT_EQ(SpecReplicas("pool"), 4);
  EXPECT_EQ(Condition("first", "ScalingLimited"), "True/TooFewReplicas");
}

TEST_F(PoolAutoscalerControllerTest, ClaimsOfThePoolFeedThePrediction) {
  CreatePool("pool", 3);
  CreateAutoscaler("pas", R"(
  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  predictivePolicy: {coldCreatesPerHour: 0, rateWindowSeconds: 60}
)");
  // No refill between the claims: the first left 2 members, so it needed 1; the second left 1,
  // so it needed 2.
  node_->set_hold(true);
  Claim("pool", 2);
  ASSERT_TRUE(Eventually([&] { return SetStatus("pool").available_replicas == 1; }));
  Tick();
  auto status = StatusOf("pas");
  ASSERT_TRUE(status.prediction);
  EXPECT_EQ(status.prediction->claims_in_lookback, 2);
  EXPECT_EQ(status.prediction->replicas, 2);  // no cold create allowed: the largest need
  EXPECT_EQ(SpecReplicas("pool"), 2);
  auto rescaled = EventMessages("SuccessfulRescale");
  ASSERT_EQ(rescaled.size(), 1u);
  EXPECT_NE(rescaled[0].find("predictive: predicted demand"), std::string::npos) << rescaled[0];
}

}  // namespace
}  // namespace warren::controller
