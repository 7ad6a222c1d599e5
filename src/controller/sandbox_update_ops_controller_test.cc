#include "controller/sandbox_update_ops_controller.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "api/inplace_update.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_update_ops.h"
#include "api/yaml_codec.h"
#include "controller/testing/eventually.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
namespace labels = api::labels;

std::string HashOf(const api::Json& pod_template) {
  return api::PodTemplateHash(api::DecodeTyped<api::PodTemplateSpec>(pod_template, "t").value());
}

std::string ImageOf(const api::Object& s) {
  return s.spec().at("template").at("spec").at("containers").at(0).value("image", "");
}

// Stands in for the node agent, by the contract in sandbox_update_ops_controller.h: a sandbox
// whose template hash differs from status.updateRevision (and from failedUpdateRevision) is
// updated — InplaceUpdating and not Ready for `work`, then updateRevision = the hash and Ready,
// or, for a sandbox in `fail`, failedUpdateRevision = the hash and InplaceUpdate Failed. A
// paused one only with the resume trigger. It records the hooks it "ran" in order and the
// most sandboxes it ever saw updating at once.
class FakeNode {
 public:
  explicit FakeNode(store::Store& store) : store_(store), thread_([this] { Loop(); }) {}
  ~FakeNode() {
    stop_ = true;
    thread_.join();
  }

  std::atomic<bool> hold{false};  // while true, updates started are not finished
  std::set<std::string> fail;     // set before the ops is created

  std::vector<std::string> Hooks() {
    std::lock_guard lock(mu_);
    return hooks_;
  }
  int MaxUpdating() const { return max_updating_; }

 private:
  void Loop() {
    while (!stop_) {
      auto list = store_.List(api::SandboxKind(), {});
      if (list.ok()) {
        int updating = 0;
        for (auto& s : list->items) updating += Step(s);
        max_updating_ = std::max(max_updating_.load(), updating);
      }
      std::this_thread::sleep_for(2ms);
    }
  }

  // One look at one sandbox; true when it is being updated.
  bool Step(api::Object& s) {
    const api::Json& spec = std::as_const(s).spec();
    if (!spec.contains("template")) return false;
    const std::string want = HashOf(spec.at("template"));
    auto st = api::DecodeStatus<api::SandboxStatus>(s).value();
    const api::Json& raw = std::as_const(s).status();
    if (st.update_revision == want || raw.value("failedUpdateRevision", "") == want) return false;
    if (st.phase == api::sandbox_phase::kPaused &&
        !s.metadata.annotations.contains(api::annotations::kUpgradeResumeTrigger)) {
      return false;
    }
    const std::string& name = s.metadata.name;
    auto now = base::RealClock().Now();
    auto started = started_.find(name);
    if (started == started_.end()) {
      started_[name] = std::chrono::steady_clock::now();
      Hook(spec, "preUpgrade", name);
      api::SetCondition(st.conditions, {"InplaceUpdate", "False", "InplaceUpdating", ""}, now);
      api::SetCondition(st.conditions, {"Ready", "False", "InplaceUpdating", ""}, now);
      Write(s, st, {});
      return true;
    }
    if (hold || std::chrono::steady_clock::now() - started->second < 20ms) return true;
    started_.erase(started);
    if (fail.contains(name)) {
      api::SetCondition(
          st.conditions,
          {"InplaceUpdate", "False", "Failed", "preUpgrade hook exited with code 3: no space left"},
          now);
      api::SetCondition(st.conditions, {"Ready", "True", "SandboxReady", ""}, now);
      Write(s, st, want);
      return false;
    }
    Hook(spec, "postUpgrade", name);
    st.update_revision = want;
    api::SetCondition(st.conditions, {"InplaceUpdate", "True", "Succeeded", ""}, now);
    if (st.phase != api::sandbox_phase::kPaused) {
      api::SetCondition(st.conditions, {"Ready", "True", "SandboxReady", ""}, now);
    }
    Write(s, st, {});
    return false;
  }

  void Hook(const api::Json& spec, const char* which, const std::string& name) {
    if (!spec.contains("lifecycle") || !spec.at("lifecycle").contains(which)) return;
    std::lock_guard lock(mu_);
    hooks_.push_back(fmt::format("{} {}", which, name));
  }

  void Write(api::Object s, const api::SandboxStatus& st, const std::string& failed_revision) {
    api::EncodeStatus(st, s);
    if (!failed_revision.empty()) s.status()["failedUpdateRevision"] = failed_revision;
    (void)store_.UpdateStatus(std::move(s));  // a conflict: the next look does it again
  }

  store::Store& store_;
  std::atomic<bool> stop_{false};
  std::map<std::string, std::chrono::steady_clock::time_point> started_;  // loop thread only
  std::mutex mu_;
  std::vector<std::string> hooks_;  // guarded by mu_
  std::atomic<int> max_updating_{0};
  std::thread thread_;
};

class SandboxUpdateOpsControllerTest : public ::testing::Test {
 protected:
  void TearDown() override { controller_.Stop(); }

  // `n` sandboxes named sbx-00.. (created in reverse order, so the store's order is not the
  // rollout's), Running, Ready and on their template's revision.
  void CreatePool(int n, const std::string& phase = api::sandbox_phase::kRunning, int from = 0) {
    for (int i = from + n - 1; i >= from; --i) {
      auto s = store::testing::MakeSandbox(fmt::format("sbx-{:02d}", i), {{"app", "a"}});
      s.spec()["template"]["spec"]["containers"][0]["image"] = "img:1";
      CreateRunning(std::move(s), phase);
    }
  }
  void CreateRunning(api::Object s, const std::string& phase = api::sandbox_phase::kRunning) {
    std::string revision;
    if (std::as_const(s).spec().contains("template")) {
      revision = HashOf(std::as_const(s).spec().at("template"));
    } else {
      revision =
          HashOf(store_->Get(api::SandboxTemplateKind(), "default", "tmpl")->spec().at("template"));
    }
    if (phase == api::sandbox_phase::kPaused) s.spec()["paused"] = true;
    auto created = store_->Create(std::move(s));
    ASSERT_TRUE(created.ok()) << created.status();
    api::SandboxStatus st;
    st.phase = phase;
    st.update_revision = revision;
    api::SetCondition(st.conditions,
                      {"Ready", phase == api::sandbox_phase::kRunning ? "True" : "False", "x", ""},
                      base::RealClock().Now());
    api::EncodeStatus(st, *created);
    ASSERT_TRUE(store_->UpdateStatus(*created).ok());
  }
  void CreateOps(const std::string& yaml_spec_extra, const std::string& name = "up") {
    auto doc = api::ParseYaml(fmt::format(
        "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxUpdateOps\nmetadata: {{name: {}, "
        "namespace: default}}\nspec:\n  selector: {{matchLabels: {{app: a}}}}\n  patch: {{spec: "
        "{{containers: [{{name: main, image: \"img:2\"}}]}}}}\n  lifecycle: {{preUpgrade: {{exec: "
        "{{command: [sh, -c, 'echo pre']}}}}, postUpgrade: {{exec: {{command: [sh, -c, 'echo "
        "post']}}}}}}\n{}",
        name, yaml_spec_extra));
    ASSERT_TRUE(doc.ok()) << doc.status();
    auto created = store_->Create(api::ObjectFromJson(*doc).value());
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void PatchOps(api::Json patch, const std::string& name = "up") {
    auto r = store_->Patch(api::SandboxUpdateOpsKind(), "default", name, patch);
    ASSERT_TRUE(r.ok()) << r.status();
  }
  api::Object Ops(const std::string& name = "up") {
    return store_->Get(api::SandboxUpdateOpsKind(), "default", name).value();
  }
  api::SandboxUpdateOpsStatus OpsStatus(const std::string& name = "up") {
    auto o = store_->Get(api::SandboxUpdateOpsKind(), "default", name);
    if (!o.ok()) return {};
    return api::DecodeStatus<api::SandboxUpdateOpsStatus>(*o).value();
  }
  std::string Phase(const std::string& name = "up") { return OpsStatus(name).phase; }
  api::Object Sandbox(const std::string& name) {
    return store_->Get(api::SandboxKind(), "default", name).value();
  }
  std::vector<std::string> WithImage(const std::string& image) {
    std::vector<std::string> out;
    auto list = store_->List(api::SandboxKind(), {});
    if (!list.ok()) return out;
    for (auto& s : list->items) {
      if (ImageOf(s) == image) out.push_back(s.metadata.name);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  int EventsWithReason(const std::string& reason) {
    int n = 0;
    auto list = store_->List(api::EventKind(), {});
    if (!list.ok()) return n;
    for (auto& e : list->items) {
      n += std::as_const(e).body.value("reason", "") == reason;
    }
    return n;
  }
  void Start() { ASSERT_TRUE(controller_.Start().ok()); }

  store::testing::TempStore store_;
  obs::EventRecorder events_{store_.store(), {.component = "sandboxupdateops-controller"}};
  SandboxUpdateOpsController controller_{store_.store(), &events_};
};

std::vector<std::string> Names(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i) out.push_back(fmt::format("sbx-{:02d}", i));
  return out;
}

TEST_F(SandboxUpdateOpsControllerTest, PoolOfTenInNameOrderOneAtATimeWithHooksInOrder) {
  CreatePool(10);
  FakeNode node(store_.store());
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s)) << Phase();
  EXPECT_EQ(node.MaxUpdating(), 1);
  std::vector<std::string> want;
  for (const auto& n : Names(0, 10)) {
    want.push_back("preUpgrade " + n);
    want.push_back("postUpgrade " + n);
  }
  EXPECT_EQ(node.Hooks(), want);  // name order, and each sandbox's hooks around its update
  auto st = OpsStatus();
  EXPECT_EQ(st.replicas, 10);
  EXPECT_EQ(st.updated_replicas, 10);
  EXPECT_EQ(st.updating_replicas, 0);
  EXPECT_EQ(st.failed_replicas, 0);
  EXPECT_EQ(st.observed_generation, Ops().metadata.generation);
  EXPECT_EQ(WithImage("img:2"), Names(0, 10));
  api::Object s = Sandbox("sbx-03");
  EXPECT_EQ(s.metadata.labels.at(labels::kUpdateOps), "up");
  EXPECT_FALSE(std::as_const(s).spec().contains("upgradePolicy"));  // cleared once done
  EXPECT_EQ(std::as_const(s).spec().at("lifecycle").at("preUpgrade").at("exec").at("command"),
            api::Json::array({"sh", "-c", "echo pre"}));
  EXPECT_TRUE(Ops().HasFinalizer(api::finalizers::kSandboxUpdateOps));
  EXPECT_TRUE(Eventually([&] { return EventsWithReason("SuccessfulUpdateSandbox") == 10; }));
}

TEST_F(SandboxUpdateOpsControllerTest, MaxUnavailableIsNeverExceeded) {
  CreatePool(10);
  FakeNode node(store_.store());
  Start();
  CreateOps("  updateStrategy: {maxUnavailable: 30%}\n");  // 3 of 10, rounded up
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s)) << Phase();
  EXPECT_EQ(node.MaxUpdating(), 3);
  EXPECT_EQ(WithImage("img:2").size(), 10u);
}

TEST_F(SandboxUpdateOpsControllerTest, WhileUpdatingTheCountsAndUpgradePolicyShow) {
  CreatePool(4);
  FakeNode node(store_.store());
  node.hold = true;
  Start();
  CreateOps("  updateStrategy: {maxUnavailable: 2}\n");
  ASSERT_TRUE(Eventually([&] { return OpsStatus().updating_replicas == 2; }));
  auto st = OpsStatus();
  EXPECT_EQ(st.phase, "Updating");
  EXPECT_EQ(st.replicas, 4);
  EXPECT_EQ(st.updated_replicas, 0);
  const api::Object first = Sandbox("sbx-00");
  EXPECT_EQ(first.spec().at("upgradePolicy"), api::Json({{"type", "Recreate"}}));
  EXPECT_EQ(ImageOf(Sandbox("sbx-02")), "img:1");
  node.hold = false;
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s));
}

TEST_F(SandboxUpdateOpsControllerTest, PauseStartsNoneAndLetsTheInFlightFinish) {
  CreatePool(6);
  FakeNode node(store_.store());
  Start();
  CreateOps("  paused: true\n");
  ASSERT_TRUE(Eventually([&] { return OpsStatus().replicas == 6; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(Phase(), "Pending");
  EXPECT_TRUE(WithImage("img:2").empty());
  const auto paused = OpsStatus();
  auto cond = api::FindCondition(paused.conditions, "Progressing");
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->reason, "Paused");

  node.hold = true;
  PatchOps({{"spec", {{"paused", false}, {"updateStrategy", {{"maxUnavailable", 2}}}}}});
  ASSERT_TRUE(Eventually([&] { return OpsStatus().updating_replicas == 2; }));
  PatchOps({{"spec", {{"paused", true}}}});
  ASSERT_TRUE(Eventually([&] {
    const auto st = OpsStatus();
    auto c = api::FindCondition(st.conditions, "Progressing");
    return c != nullptr && c->reason == "Paused";
  }));
  node.hold = false;
  ASSERT_TRUE(Eventually([&] { return OpsStatus().updated_replicas == 2; }));
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(WithImage("img:2"), Names(0, 2));  // the two in flight finished, no third began
  EXPECT_EQ(Phase(), "Updating");
  PatchOps({{"spec", {{"paused", false}}}});
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s));
  EXPECT_EQ(WithImage("img:2").size(), 6u);
}

TEST_F(SandboxUpdateOpsControllerTest, PartitionKeepsTheLastOnesUntilLowered) {
  CreatePool(10);
  FakeNode node(store_.store());
  Start();
  CreateOps("  partition: 4\n  updateStrategy: {maxUnavailable: 3}\n");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s)) << Phase();
  EXPECT_EQ(WithImage("img:2"), Names(0, 6));
  EXPECT_EQ(WithImage("img:1"), Names(6, 10));
  EXPECT_EQ(OpsStatus().updated_replicas, 6);
  EXPECT_EQ(OpsStatus().replicas, 10);
  EXPECT_NE(api::FindCondition(OpsStatus().conditions, "Progressing")
                ->message.find("4 kept by the partition"),
            std::string::npos);
  PatchOps({{"spec", {{"partition", "20%"}}}});  // 2 of 10
  ASSERT_TRUE(Eventually([&] { return WithImage("img:2").size() == 8u; }, 30s));
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s));
  EXPECT_EQ(WithImage("img:1"), Names(8, 10));
  EXPECT_LE(node.MaxUpdating(), 3);
}

TEST_F(SandboxUpdateOpsControllerTest, AFailingHookStopsTheRolloutWithAReason) {
  CreatePool(10);
  FakeNode node(store_.store());
  node.fail = {"sbx-02"};
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Failed"; }, 30s)) << Phase();
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(WithImage("img:2"), Names(0, 3));   // sbx-02 was given it and failed
  EXPECT_EQ(WithImage("img:1"), Names(3, 10));  // nothing after it started
  auto st = OpsStatus();
  EXPECT_EQ(st.updated_replicas, 2);
  EXPECT_EQ(st.failed_replicas, 1);
  EXPECT_EQ(st.updating_replicas, 0);
  auto cond = api::FindCondition(st.conditions, "Progressing");
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->status, "False");
  EXPECT_EQ(cond->reason, "SandboxUpdateFailed");
  EXPECT_NE(cond->message.find("sbx-02"), std::string::npos) << cond->message;
  EXPECT_NE(cond->message.find("preUpgrade hook exited with code 3"), std::string::npos)
      << cond->message;
  EXPECT_EQ(Sandbox("sbx-02").metadata.labels.at(labels::kUpgradeFailed), "true");
  EXPECT_FALSE(Sandbox("sbx-01").metadata.labels.contains(labels::kUpgradeFailed));
  EXPECT_TRUE(Eventually([&] { return EventsWithReason("FailedUpdateSandbox") == 1; }));
  // Unpausing or editing does not restart a stopped rollout.
  PatchOps({{"spec", {{"updateStrategy", {{"maxUnavailable", 5}}}}}});
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(WithImage("img:1"), Names(3, 10));
  EXPECT_EQ(Phase(), "Failed");
}

TEST_F(SandboxUpdateOpsControllerTest, StateFilterChoosesRunningOrAlsoPaused) {
  CreatePool(2);
  CreatePool(2, api::sandbox_phase::kPaused, /*from=*/2);
  FakeNode node(store_.store());
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s));
  EXPECT_EQ(OpsStatus().replicas, 2);
  EXPECT_EQ(WithImage("img:2"), Names(0, 2));
  EXPECT_FALSE(Sandbox("sbx-02").metadata.labels.contains(labels::kUpdateOps));

  ASSERT_TRUE(store_->Delete(api::SandboxUpdateOpsKind(), "default", "up").ok());
  ASSERT_TRUE(
      Eventually([&] { return !store_->Get(api::SandboxUpdateOpsKind(), "default", "up").ok(); }));
  node.hold = true;
  CreateOps("  stateFilter: {states: [Paused]}\n  updateStrategy: {maxUnavailable: 2}\n", "paused");
  // A paused sandbox is given the resume trigger with its new template ...
  ASSERT_TRUE(Eventually([&] { return OpsStatus("paused").updating_replicas == 2; }));
  EXPECT_EQ(OpsStatus("paused").replicas, 2);
  EXPECT_EQ(Sandbox("sbx-03").metadata.annotations.at(api::annotations::kUpgradeResumeTrigger),
            "true");
  node.hold = false;
  ASSERT_TRUE(Eventually([&] { return Phase("paused") == "Completed"; }, 30s));
  // ... which is taken off once it is done (the node froze it again).
  EXPECT_FALSE(
      Sandbox("sbx-03").metadata.annotations.contains(api::annotations::kUpgradeResumeTrigger));
  EXPECT_EQ(WithImage("img:2").size(), 4u);
}

TEST_F(SandboxUpdateOpsControllerTest, ATemplateRefIsInlinedWithThePatch) {
  auto tmpl = api::ObjectFromJson(*api::ParseYaml(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxTemplate
metadata: {name: tmpl, namespace: default}
spec:
  template: {spec: {containers: [{name: main, image: "img:1", command: [sleep, "9"]},
                                 {name: side, image: "side:1"}]}})"));
  ASSERT_TRUE(store_->Create(*tmpl).ok());
  auto s = store::testing::MakeSandbox("by-ref", {{"app", "a"}});
  s.spec().erase("template");
  s.spec()["templateRef"] = {{"name", "tmpl"}};
  CreateRunning(std::move(s));
  FakeNode node(store_.store());
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s)) << Phase();
  api::Object got = Sandbox("by-ref");
  const api::Json& spec = std::as_const(got).spec();
  EXPECT_FALSE(spec.contains("templateRef"));
  const api::Json& containers = spec.at("template").at("spec").at("containers");
  ASSERT_EQ(containers.size(), 2u);
  EXPECT_EQ(containers[0]["image"], "img:2");
  EXPECT_EQ(containers[0]["command"], api::Json::array({"sleep", "9"}));
  EXPECT_EQ(containers[1]["image"], "side:1");
}

TEST_F(SandboxUpdateOpsControllerTest, TheYoungerOfTwoActiveOpsGivesWay) {
  CreatePool(3);
  FakeNode node(store_.store());
  node.hold = true;
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Updating"; }));
  CreateOps("", "later");
  ASSERT_TRUE(Eventually([&] { return Phase("later") == "Failed"; }));
  const auto later = OpsStatus("later");
  auto cond = api::FindCondition(later.conditions, "Progressing");
  ASSERT_NE(cond, nullptr);
  EXPECT_EQ(cond->reason, "AnotherOpsActive");
  EXPECT_NE(cond->message.find("\"up\""), std::string::npos);
  EXPECT_EQ(Phase(), "Updating");
  node.hold = false;
  ASSERT_TRUE(Eventually([&] { return Phase() == "Completed"; }, 30s));
}

TEST_F(SandboxUpdateOpsControllerTest, DeletingTheOpsTakesItsLabelsOff) {
  CreatePool(3);
  FakeNode node(store_.store());
  node.fail = {"sbx-00"};
  Start();
  CreateOps("");
  ASSERT_TRUE(Eventually([&] { return Phase() == "Failed"; }, 30s));
  ASSERT_TRUE(
      Eventually([&] { return Sandbox("sbx-02").metadata.labels.contains(labels::kUpdateOps); }));
  ASSERT_TRUE(store_->Delete(api::SandboxUpdateOpsKind(), "default", "up").ok());
  ASSERT_TRUE(
      Eventually([&] { return !store_->Get(api::SandboxUpdateOpsKind(), "default", "up").ok(); }));
  for (const auto& n : Names(0, 3)) {
    EXPECT_FALSE(Sandbox(n).metadata.labels.contains(labels::kUpdateOps)) << n;
    EXPECT_FALSE(Sandbox(n).metadata.labels.contains(labels::kUpgradeFailed)) << n;
  }
}

TEST_F(SandboxUpdateOpsControllerTest, NothingSelectedCompletesAtOnce) {
  CreatePool(2);
  Start();
  auto doc = api::ParseYaml(
      "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxUpdateOps\nmetadata: {name: none, "
      "namespace: other}\nspec: {selector: {matchLabels: {app: a}}, patch: {}}\n");
  ASSERT_TRUE(store_->Create(api::ObjectFromJson(*doc).value()).ok());
  ASSERT_TRUE(Eventually([&] {
    auto o = store_->Get(api::SandboxUpdateOpsKind(), "other", "none");
    return o.ok() && api::DecodeStatus<api::SandboxUpdateOpsStatus>(*o)->phase == "Completed";
  }));
}

}  // namespace
}  // namespace warren::controller
