#include "controller/scheduler_controller.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "controller/testing/eventually.h"
#include "controller/testing/test_nodes.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::PutNode;
using testing::TestNode;

constexpr int64_t kGi = int64_t{1} << 30;

// A Sandbox that asks for 2 CPUs and 512Mi (what it reserves when placed: its requests).
api::Object Sized(std::string name, std::map<std::string, std::string> labels = {}) {
  api::Object o = store::testing::MakeSandbox(std::move(name), std::move(labels));
  auto& requests = o.spec()["template"]["spec"]["containers"][0]["resources"]["requests"];
  requests["cpu"] = "2";
  requests["memory"] = "512Mi";
  return o;
}

class SchedulerControllerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(scheduler_.Start().ok()); }
  void TearDown() override { scheduler_.Stop(); }

  void CreateSandbox(const std::string& name) {
    auto created = store_->Create(Sized(name));
    ASSERT_TRUE(created.ok()) << created.status();
  }
  api::SandboxStatus StatusOf(const std::string& name) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    if (!o.ok()) return {};
    return api::DecodeStatus<api::SandboxStatus>(*o).value();
  }
  std::string NodeOf(const std::string& name) { return StatusOf(name).node_name; }
  // PodScheduled's "status/reason/message", or "" without it.
  std::string Scheduled(const std::string& name) {
    auto st = StatusOf(name);
    const api::Condition* c = api::FindCondition(st.conditions, "PodScheduled");
    return c ? c->status + "/" + c->reason + "/" + c->message : "";
  }
  std::vector<std::string> EventMessages(const std::string& reason) {
    std::vector<std::string> out;
    auto list = store_->List(api::EventKind(), {});
    if (!list.ok()) return out;
    for (auto& e : list->items) {
      const api::Json& body = std::as_const(e).body;
      if (body.value("reason", "") == reason) out.push_back(body.value("message", ""));
    }
    return out;
  }

  store::testing::TempStore store_;
  obs::EventRecorder events_{store_.store(), {.component = "scheduler"}};
  SchedulerController scheduler_{store_.store(), base::RealClock(), &events_};
};

TEST_F(SchedulerControllerTest, APendingSandboxIsPlacedAndSaysSo) {
  PutNode(store_.store(), {.name = "a"});
  PutNode(store_.store(), {.name = "b"});
  CreateSandbox("s1");
  ASSERT_TRUE(Eventually([&] { return !NodeOf("s1").empty(); }));
  EXPECT_EQ(NodeOf("s1"), "a");  // equal nodes: by name
  EXPECT_EQ(Scheduled("s1"), "True/Scheduled/placed on node a");
  EXPECT_EQ(StatusOf("s1").phase, "Pending");
  ASSERT_TRUE(Eventually([&] { return !EventMessages("Scheduled").empty(); }));
  EXPECT_EQ(EventMessages("Scheduled")[0], "Successfully assigned default/s1 to a");
  // The next goes where there is the most room.
  CreateSandbox("s2");
  ASSERT_TRUE(Eventually([&] { return NodeOf("s2") == "b"; })) << NodeOf("s2");
}

TEST_F(SchedulerControllerTest, NothingFitsThenANodeWithRoomAppears) {
  PutNode(store_.store(), {.name = "small", .cpu_millicores = 1000});
  PutNode(store_.store(), {.name = "cordoned", .unschedulable = true});
  PutNode(store_.store(), {.name = "lost", .ready = "Unknown"});
  CreateSandbox("s1");
  const std::string why =
      "0/3 nodes are available: 1 Insufficient cpu, 1 node(s) were not ready, 1 node(s) were "
      "unschedulable.";
  ASSERT_TRUE(Eventually([&] { return Scheduled("s1") == "False/Unschedulable/" + why; }))
      << Scheduled("s1");
  EXPECT_EQ(NodeOf("s1"), "");
  EXPECT_EQ(StatusOf("s1").phase, "Pending");
  ASSERT_TRUE(Eventually([&] { return EventMessages("FailedScheduling").size() == 1; }));
  EXPECT_EQ(EventMessages("FailedScheduling")[0], why);

  PutNode(store_.store(), {.name = "big"});
  ASSERT_TRUE(Eventually([&] { return NodeOf("s1") == "big"; })) << Scheduled("s1");
  EXPECT_EQ(Scheduled("s1"), "True/Scheduled/placed on node big");
}

// A sandbox restored from a checkpoint goes to the node holding the checkpoint's images, not
// to the emptiest one.
TEST_F(SchedulerControllerTest, ASandboxFromACheckpointGoesToTheNodeThatCapturedIt) {
  PutNode(store_.store(), {.name = "a"});
  PutNode(store_.store(), {.name = "b"});
  api::Object cp;
  cp.api_version = "agents.kruise.io/v1alpha1";
  cp.kind = "Checkpoint";
  cp.metadata.name = "snap-1";
  cp.metadata.namespace_ = "default";
  cp.metadata.annotations[api::kCheckpointNodeAnnotation] = "b";
  cp.spec()["sandboxName"] = "source";
  auto created = store_->Create(cp);
  ASSERT_TRUE(created.ok()) << created.status();
  for (const char* name : {"c1", "c2", "c3"}) {
    api::Object o = Sized(name);
    o.metadata.annotations[api::annotations::kRestoreFrom] = "snap-1";
    ASSERT_TRUE(store_->Create(o).ok());
  }
  // Not placed while the checkpoint is being made (its node is not final until it is done).
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(NodeOf("c1"), "");
  api::Object done = *created;
  api::CheckpointStatus st;
  st.phase = "Succeeded";
  api::EncodeStatus(st, done);
  ASSERT_TRUE(store_->UpdateStatus(done).ok());
  for (const char* name : {"c1", "c2", "c3"}) {
    ASSERT_TRUE(Eventually([&] { return !NodeOf(name).empty(); })) << Scheduled(name);
    EXPECT_EQ(NodeOf(name), "b") << name;
  }
  CreateSandbox("plain");  // not from a checkpoint: where there is room
  ASSERT_TRUE(Eventually([&] { return NodeOf("plain") == "a"; })) << NodeOf("plain");
}

TEST_F(SchedulerControllerTest, AnUncordonedNodeIsUsedAgain) {
  PutNode(store_.store(), {.name = "a", .unschedulable = true});
  CreateSandbox("s1");
  ASSERT_TRUE(Eventually([&] { return Scheduled("s1").starts_with("False/Unschedulable/"); }));
  PutNode(store_.store(), {.name = "a"});
  ASSERT_TRUE(Eventually([&] { return NodeOf("s1") == "a"; })) << Scheduled("s1");
}

TEST_F(SchedulerControllerTest, ASandboxThatGoesMakesRoomForOneWaiting) {
  PutNode(store_.store(), {.name = "a", .sandboxes = 1});
  CreateSandbox("s1");
  ASSERT_TRUE(Eventually([&] { return NodeOf("s1") == "a"; }));
  CreateSandbox("s2");
  ASSERT_TRUE(Eventually([&] {
    return Scheduled("s2") == "False/Unschedulable/0/1 nodes are available: 1 Too many sandboxes.";
  })) << Scheduled("s2");
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "s1").ok());
  ASSERT_TRUE(Eventually([&] { return NodeOf("s2") == "a"; })) << Scheduled("s2");
}

TEST_F(SchedulerControllerTest, AFinishedSandboxNoLongerHoldsItsRoom) {
  PutNode(store_.store(), {.name = "a", .cpu_millicores = 2000});
  CreateSandbox("s1");
  ASSERT_TRUE(Eventually([&] { return NodeOf("s1") == "a"; }));
  CreateSandbox("s2");
  ASSERT_TRUE(Eventually([&] { return Scheduled("s2").starts_with("False/Unschedulable/"); }));
  auto s1 = store_->Get(api::SandboxKind(), "default", "s1");
  ASSERT_TRUE(s1.ok());
  s1->status()["phase"] = "Succeeded";
  ASSERT_TRUE(store_->UpdateStatus(*s1).ok());
  ASSERT_TRUE(Eventually([&] { return NodeOf("s2") == "a"; })) << Scheduled("s2");
}

TEST_F(SchedulerControllerTest, SandboxesCreatedTogetherNeverOverbookANode) {
  // Each sandbox takes 2 CPUs and 512Mi: a fits 2 by cpu, b 3 by its sandbox count, c 1 by
  // memory. Eight at once: six are placed, exactly up to what each node holds.
  PutNode(store_.store(), {.name = "a", .cpu_millicores = 4000});
  PutNode(store_.store(), {.name = "b", .sandboxes = 3});
  PutNode(store_.store(), {.name = "c", .memory_bytes = kGi - 1});
  for (int i = 0; i < 8; ++i) CreateSandbox("s" + std::to_string(i));
  auto counts = [&] {
    std::map<std::string, int> per_node;
    for (int i = 0; i < 8; ++i) ++per_node[NodeOf("s" + std::to_string(i))];
    return per_node;
  };
  ASSERT_TRUE(Eventually([&] {
    int decided = 0;
    for (int i = 0; i < 8; ++i) decided += !Scheduled("s" + std::to_string(i)).empty();
    return decided == 8 && counts()[""] == 2;
  })) << counts()[""];
  // Stays so: nothing is placed later over the limits either.
  std::this_thread::sleep_for(300ms);
  auto per_node = counts();
  EXPECT_EQ(per_node["a"], 2);
  EXPECT_EQ(per_node["b"], 3);
  EXPECT_EQ(per_node["c"], 1);
  EXPECT_EQ(per_node[""], 2);
}

TEST_F(SchedulerControllerTest, ABacklogPlacedBackToBackNeverOverbooks) {
  // Twenty sandboxes waiting when the scheduler starts are decided one right after the other,
  // each before the cache has seen the write before it: only its assumed placements keep it
  // from booking a node's one slot twice.
  scheduler_.Stop();
  PutNode(store_.store(), {.name = "a", .sandboxes = 1});
  PutNode(store_.store(), {.name = "b", .sandboxes = 2});
  for (int i = 0; i < 20; ++i) CreateSandbox("s" + std::to_string(i));
  SchedulerController scheduler(store_.store(), base::RealClock(), &events_);
  ASSERT_TRUE(scheduler.Start().ok());
  std::map<std::string, int> per_node;
  ASSERT_TRUE(Eventually([&] {
    per_node.clear();
    int decided = 0;
    for (int i = 0; i < 20; ++i) {
      decided += !Scheduled("s" + std::to_string(i)).empty();
      ++per_node[NodeOf("s" + std::to_string(i))];
    }
    return decided == 20;
  }));
  std::this_thread::sleep_for(300ms);
  per_node.clear();
  for (int i = 0; i < 20; ++i) ++per_node[NodeOf("s" + std::to_string(i))];
  EXPECT_EQ(per_node["a"], 1);
  EXPECT_EQ(per_node["b"], 2);
  EXPECT_EQ(per_node[""], 17);
}

TEST_F(SchedulerControllerTest, APoolIsSpreadOverNodes) {
  PutNode(store_.store(), {.name = "a"});
  PutNode(store_.store(), {.name = "b"});
  PutNode(store_.store(), {.name = "c"});
  // A larger sandbox of no pool makes c the least allocated; the pool still spreads first.
  auto big = Sized("big");
  big.spec()["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "4";
  ASSERT_TRUE(store_->Create(big).ok());
  ASSERT_TRUE(Eventually([&] { return NodeOf("big") == "a"; }));
  std::map<std::string, int> per_node;
  for (int i = 0; i < 6; ++i) {
    auto s = Sized("m" + std::to_string(i), {{"agents.kruise.io/sandbox-pool", "py"}});
    ASSERT_TRUE(store_->Create(s).ok());
  }
  ASSERT_TRUE(Eventually([&] {
    per_node.clear();
    for (int i = 0; i < 6; ++i) ++per_node[NodeOf("m" + std::to_string(i))];
    return per_node[""] == 0;
  }));
  EXPECT_EQ(per_node["a"], 2);
  EXPECT_EQ(per_node["b"], 2);
  EXPECT_EQ(per_node["c"], 2);
}

TEST_F(SchedulerControllerTest, PlacedAndDeletingSandboxesAreLeftAlone) {
  scheduler_.Stop();  // the sandboxes are there before a scheduler starts
  auto placed = Sized("placed");
  auto created = store_->Create(placed);
  ASSERT_TRUE(created.ok());
  created->status()["nodeName"] = "elsewhere";
  ASSERT_TRUE(store_->UpdateStatus(*created).ok());
  auto held = Sized("held");
  held.metadata.finalizers.push_back("test/hold");
  ASSERT_TRUE(store_->Create(held).ok());
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "held").ok());
  PutNode(store_.store(), {.name = "a"});
  SchedulerController scheduler(store_.store(), base::RealClock(), &events_);
  ASSERT_TRUE(scheduler.Start().ok());
  CreateSandbox("marker");
  ASSERT_TRUE(Eventually([&] { return NodeOf("marker") == "a"; }));
  EXPECT_EQ(NodeOf("placed"), "elsewhere");
  EXPECT_EQ(Scheduled("placed"), "");
  EXPECT_EQ(NodeOf("held"), "");
  EXPECT_EQ(Scheduled("held"), "");
}

TEST_F(SchedulerControllerTest, TheTemplateRefIsResolvedForTheDemandAndRuntimeClass) {
  PutNode(store_.store(), {.name = "native-only"});
  PutNode(store_.store(), {.name = "z-gvisor", .runtime_classes = {"native", "gvisor"}});
  api::Object tmpl;
  tmpl.api_version = api::kAgentsApiVersion;
  tmpl.kind = "SandboxTemplate";
  tmpl.metadata.name = "gv";
  tmpl.metadata.namespace_ = "default";
  tmpl.spec()["template"] = {
      {"spec",
       {{"runtimeClassName", "gvisor"}, {"containers", {{{"name", "main"}, {"image", "base"}}}}}}};
  ASSERT_TRUE(store_->Create(tmpl).ok());
  auto s = Sized("g");
  s.spec().erase("template");
  s.spec()["templateRef"] = {
      {"apiVersion", api::kAgentsApiVersion}, {"kind", "SandboxTemplate"}, {"name", "gv"}};
  ASSERT_TRUE(store_->Create(s).ok());
  ASSERT_TRUE(Eventually([&] { return NodeOf("g") == "z-gvisor"; })) << Scheduled("g");
}

}  // namespace
}  // namespace warren::controller
