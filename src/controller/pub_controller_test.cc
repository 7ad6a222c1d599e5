#include "controller/pub_controller.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/policy_kinds.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "base/testing/fake_clock.h"
#include "controller/disruption_budget.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

api::Object Budget(std::string_view name, std::string_view yaml_spec) {
  std::string doc = fmt::format(
      "apiVersion: policy.kruise.io/v1alpha1\nkind: PodUnavailableBudget\n"
      "metadata: {{name: {}, namespace: default}}\nspec: {}\n",
      name, yaml_spec);
  return api::ObjectFromJson(*api::ParseYaml(doc)).value();
}

class PubControllerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(controller_.Start().ok()); }

  // A sandbox the node agent has made Running (and Ready unless told otherwise).
  void MakeSandbox(const std::string& name, std::map<std::string, std::string> labels,
                   bool ready = true) {
    auto created = store_->Create(store::testing::MakeSandbox(name, std::move(labels)));
    ASSERT_TRUE(created.ok()) << created.status();
    SetReady(name, ready);
  }
  void SetReady(const std::string& name, bool ready) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    ASSERT_TRUE(o.ok());
    api::SandboxStatus st;
    st.phase = "Running";
    st.node_name = "node-a";
    st.conditions.push_back({.type = "Ready", .status = ready ? "True" : "False"});
    api::EncodeStatus(st, *o);
    ASSERT_TRUE(store_->UpdateStatus(*o).ok());
  }
  api::Json StatusOf(const std::string& name) {
    auto o = store_->Get(api::PodUnavailableBudgetKind(), "default", name);
    return o.ok() ? o->status() : api::Json();
  }
  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }

  store::testing::TempStore store_;
  base::FakeClock clock_;
  PubController controller_{store_.store(), clock_};
};

TEST_F(PubControllerTest, KeepsCountsOfSandboxesAndOfGroups) {
  for (int g = 1; g <= 2; ++g) {
    for (int i = 1; i <= 2; ++i) {
      MakeSandbox(fmt::format("m{}{}", g, i), {{"app", "job"}, {"grp", fmt::format("g{}", g)}});
    }
  }
  ASSERT_TRUE(store_
                  ->Create(Budget("plain",
                                  "{selector: {matchLabels: {app: job}}, "
                                  "maxUnavailable: 1}"))
                  .ok());
  ASSERT_TRUE(store_
                  ->Create(Budget("grouped",
                                  "{selector: {matchLabels: {app: job}}, maxUnavailable: 1, "
                                  "podGroupPolicy: {groupLabelKey: grp}}"))
                  .ok());
  EXPECT_TRUE(Eventually([&] { return StatusOf("plain").value("totalReplicas", 0) == 4; }))
      << StatusOf("plain");
  EXPECT_EQ(StatusOf("plain")["unavailableAllowed"], 1);
  EXPECT_EQ(StatusOf("plain")["desiredAvailable"], 3);
  EXPECT_TRUE(Eventually([&] { return StatusOf("grouped").value("totalReplicas", 0) == 2; }))
      << StatusOf("grouped");
  EXPECT_EQ(StatusOf("grouped")["currentAvailable"], 2);
  EXPECT_EQ(StatusOf("grouped")["observedGeneration"], 1);

  // One member of g2 not Ready: g2 is down, and no group may go.
  SetReady("m21", false);
  EXPECT_TRUE(Eventually([&] {
    api::Json s = StatusOf("grouped");
    return s.value("unavailableAllowed", -1) == 0 && s["unavailablePodGroups"].contains("g2");
  })) << StatusOf("grouped");
  api::Json cond = StatusOf("grouped")["conditions"][0];
  EXPECT_EQ(cond["type"], "DisruptionAllowed");
  EXPECT_EQ(cond["status"], "False");
  EXPECT_EQ(cond["reason"], "InsufficientPods");
  EXPECT_NE(cond["message"].get<std::string>().find("g2: sandbox m21 is not Ready"),
            std::string::npos)
      << cond;
  EXPECT_TRUE(Eventually([&] { return StatusOf("plain").value("unavailableAllowed", -1) == 0; }))
      << StatusOf("plain");

  // Ready again: the group leaves the map.
  SetReady("m21", true);
  EXPECT_TRUE(Eventually([&] {
    api::Json s = StatusOf("grouped");
    return s.value("unavailableAllowed", -1) == 1 && !s.contains("unavailablePodGroups");
  })) << StatusOf("grouped");
}

TEST_F(PubControllerTest, AnEvictionIsForgottenOnceItsDeletionIsSeen) {
  for (int g = 1; g <= 2; ++g) {
    for (int i = 1; i <= 2; ++i) {
      MakeSandbox(fmt::format("m{}{}", g, i), {{"app", "job"}, {"grp", fmt::format("g{}", g)}});
    }
  }
  ASSERT_TRUE(store_
                  ->Create(Budget("grouped",
                                  "{selector: {matchLabels: {app: job}}, maxUnavailable: 1, "
                                  "podGroupPolicy: {groupLabelKey: grp}}"))
                  .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("grouped").value("unavailableAllowed", 0) == 1; }));
  // What the eviction route writes when it admits m11's eviction.
  auto budget = store_->Get(api::PodUnavailableBudgetKind(), "default", "grouped");
  ASSERT_TRUE(budget.ok());
  auto list = store_->List(api::SandboxKind(), {.namespace_ = "default"});
  ASSERT_TRUE(list.ok());
  std::vector<const api::Object*> ptrs;
  for (const auto& o : list->items) ptrs.push_back(&o);
  auto view = EvaluateBudget(*budget, ptrs, std::nullopt, clock_.Now(), false);
  ASSERT_TRUE(view.ok());
  const api::Object& m11 = list->items[0];
  ASSERT_EQ(m11.metadata.name, "m11");
  EncodeBudgetStatus(EvictionStatus(*view, m11, clock_.Now()), *budget);
  ASSERT_TRUE(store_->UpdateStatus(*budget).ok());
  // While m11 is there, g1 stays down and the controller keeps the record.
  std::this_thread::sleep_for(200ms);
  api::Json held = StatusOf("grouped");
  EXPECT_TRUE(held["disruptedPods"].contains("m11")) << held;
  EXPECT_TRUE(held["unavailablePodGroups"].contains("g1")) << held;
  EXPECT_EQ(held["unavailableAllowed"], 0);

  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "m11").ok());
  EXPECT_TRUE(Eventually([&] {
    api::Json s = StatusOf("grouped");
    return !s.contains("disruptedPods") && !s.contains("unavailablePodGroups") &&
           s.value("unavailableAllowed", 0) == 1;
  })) << StatusOf("grouped");
}

TEST_F(PubControllerTest, ATargetRefBudgetCountsTheSetsReplicas) {
  auto set = store_->Create(store::testing::MakeSandboxSet("pool", 3));
  ASSERT_TRUE(set.ok());
  for (const char* name : {"pool-a", "pool-b"}) {
    api::Object o = store::testing::MakeSandbox(name, {});
    o.metadata.owner_references.push_back(set->MakeControllerRef());
    ASSERT_TRUE(store_->Create(o).ok());
    SetReady(name, true);
  }
  ASSERT_TRUE(
      store_->Create(Budget("pool", "{targetRef: {kind: SandboxSet, name: pool}, minAvailable: 2}"))
          .ok());
  EXPECT_TRUE(Eventually([&] {
    api::Json s = StatusOf("pool");
    return s.value("totalReplicas", 0) == 3 && s.value("currentAvailable", 0) == 2 &&
           s.value("unavailableAllowed", -1) == 0;
  })) << StatusOf("pool");
  ASSERT_TRUE(
      store_->Patch(api::SandboxSetKind(), "default", "pool", {{"spec", {{"replicas", 2}}}}).ok());
  EXPECT_TRUE(Eventually([&] { return StatusOf("pool").value("totalReplicas", 0) == 2; }))
      << StatusOf("pool");
}

}  // namespace
}  // namespace warren::controller
