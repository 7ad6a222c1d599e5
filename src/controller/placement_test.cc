#include "controller/placement.h"

#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/node.h"
#include "store/testing/objects.h"

namespace warren::controller {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;
constexpr int64_t kMi = int64_t{1} << 20;

NodeFacts Node(std::string name, int64_t cpu_millicores = 8000, int64_t memory = 16 * kGi) {
  NodeFacts n;
  n.name = std::move(name);
  n.ready = true;
  n.cpu_millicores = cpu_millicores;
  n.memory_bytes = memory;
  n.runtime_classes = {"native"};
  return n;
}

SandboxDemand Demand(int64_t cpu = 1000, int64_t memory = 512 * kMi) {
  return SandboxDemand{.cpu_millicores = cpu, .memory_bytes = memory};
}

PlacedSandbox On(std::string node, SandboxDemand d = Demand()) {
  return PlacedSandbox{std::move(node), std::move(d)};
}

TEST(PlaceTest, PicksTheLeastAllocatedNodeAndNamesItDeterministically) {
  std::vector<NodeFacts> nodes{Node("a"), Node("b"), Node("c")};
  EXPECT_EQ(Place(Demand(), nodes, {}).node, "a");  // all equal: by name
  EXPECT_EQ(Place(Demand(), nodes, {On("a"), On("b")}).node, "c");
  EXPECT_EQ(Place(Demand(), nodes, {On("a"), On("a"), On("c")}).node, "b");
}

// Templates without resources reserve nothing: the sandbox count still spreads them.
TEST(PlaceTest, SandboxesThatReserveNothingSpreadByTheirCount) {
  std::vector<NodeFacts> nodes{Node("a"), Node("b"), Node("c")};
  for (auto& n : nodes) n.sandboxes = 1000;
  std::vector<PlacedSandbox> placed;
  std::vector<std::string> where;
  for (int i = 0; i < 4; ++i) {
    auto d = Place(Demand(0, 0), nodes, placed);
    where.push_back(d.node);
    placed.push_back(On(d.node, Demand(0, 0)));
  }
  EXPECT_EQ(where, (std::vector<std::string>{"a", "b", "c", "a"}));
}

TEST(PlaceTest, CpuAndMemoryMustFitWhatIsLeftAfterPlacedSandboxes) {
  std::vector<NodeFacts> nodes{Node("a", 2000, 4 * kGi), Node("b", 8000, kGi)};
  // a has 1 CPU left after one placed sandbox; b has the CPUs but not the memory.
  auto d = Place(Demand(1500, 2 * kGi), nodes, {On("a", Demand(1000, kMi))});
  EXPECT_EQ(d.node, "");
  EXPECT_EQ(d.message, "0/2 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.");
  // Without the placed sandbox a fits.
  EXPECT_EQ(Place(Demand(1500, 2 * kGi), nodes, {}).node, "a");
  // Exactly full is a fit.
  EXPECT_EQ(Place(Demand(1000, kGi), {Node("a", 2000, 2 * kGi)}, {On("a", Demand(1000, kGi))}).node,
            "a");
}

TEST(PlaceTest, ANodeShortOfBothIsCountedUnderBoth) {
  auto d = Place(Demand(4000, 4 * kGi), {Node("a", 2000, kGi)}, {});
  EXPECT_EQ(d.message, "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory.");
}

TEST(PlaceTest, TheSandboxCountIsALimitWhenTheNodeStatesIt) {
  NodeFacts a = Node("a");
  a.sandboxes = 2;
  std::vector<NodeFacts> nodes{a};
  EXPECT_EQ(Place(Demand(), nodes, {On("a")}).node, "a");
  auto d = Place(Demand(), nodes, {On("a"), On("a")});
  EXPECT_EQ(d.node, "");
  EXPECT_EQ(d.message, "0/1 nodes are available: 1 Too many sandboxes.");
}

TEST(PlaceTest, AnUnstatedResourceIsNotChecked) {
  NodeFacts a = Node("a");
  a.cpu_millicores.reset();
  a.memory_bytes.reset();
  EXPECT_EQ(Place(Demand(64000, 512 * kGi), {a}, {}).node, "a");
}

TEST(PlaceTest, TheRuntimeClassMustBeOffered) {
  NodeFacts native = Node("native-only");
  NodeFacts both = Node("z-both");
  both.runtime_classes = {"native", "gvisor"};
  NodeFacts unstated = Node("unstated");
  unstated.runtime_classes.clear();  // a node that states none offers native
  SandboxDemand gvisor = Demand();
  gvisor.runtime_class = "gvisor";
  EXPECT_EQ(Place(gvisor, {native, both, unstated}, {}).node, "z-both");
  auto d = Place(gvisor, {native, unstated}, {});
  EXPECT_EQ(d.message,
            "0/2 nodes are available: 2 node(s) did not offer runtime class \"gvisor\".");
  SandboxDemand named_native = Demand();
  named_native.runtime_class = "native";
  EXPECT_EQ(Place(named_native, {unstated}, {}).node, "unstated");
  // No class named: the node's default, whatever it is.
  EXPECT_EQ(Place(Demand(), {unstated}, {}).node, "unstated");
}

TEST(PlaceTest, CordonedAndNotReadyNodesAreExcludedWithTheirReasons) {
  NodeFacts cordoned = Node("a");
  cordoned.unschedulable = true;
  NodeFacts lost = Node("b");
  lost.ready = false;
  NodeFacts small = Node("c", 8000, 256 * kMi);
  NodeFacts small2 = Node("d", 8000, 256 * kMi);
  auto d = Place(Demand(), {cordoned, lost, small, small2}, {});
  EXPECT_EQ(d.node, "");
  EXPECT_EQ(d.message,
            "0/4 nodes are available: 2 Insufficient memory, 1 node(s) were not ready, 1 "
            "node(s) were unschedulable.");
  // A cordoned node that is also not ready counts as not ready only.
  cordoned.ready = false;
  EXPECT_EQ(Place(Demand(), {cordoned}, {}).message,
            "0/1 nodes are available: 1 node(s) were not ready.");
  EXPECT_EQ(Place(Demand(), {cordoned, Node("e")}, {}).node, "e");
}

// A sandbox started from a checkpoint goes where the checkpoint's images are, or nowhere.
TEST(PlaceTest, ASandboxFromACheckpointRunsOnlyOnTheNodeThatCapturedIt) {
  SandboxDemand clone = Demand();
  clone.node = "b";
  EXPECT_EQ(Place(clone, {Node("a"), Node("b"), Node("c")}, {On("b"), On("b")}).node, "b")
      << "the less loaded nodes are not its checkpoint's";
  NodeFacts b = Node("b");
  b.ready = false;
  EXPECT_EQ(Place(clone, {Node("a"), b, Node("c")}, {}).message,
            "0/3 nodes are available: 2 node(s) did not hold the checkpoint it starts from, 1 "
            "node(s) were not ready.");
  clone.node = "gone";
  EXPECT_EQ(Place(clone, {Node("a")}, {}).node, "");
}

TEST(PlaceTest, NoNodes) {
  EXPECT_EQ(Place(Demand(), {}, {}).message, "0/0 nodes are available: no Node is registered.");
}

TEST(PlaceTest, ANodeHoldingTheImageIsPreferred) {
  NodeFacts a = Node("a");
  NodeFacts b = Node("b");
  b.images = {"python:3.12", "python:3.12@sha256:abc"};
  NodeFacts c = Node("c");
  c.images = {"base:latest"};
  SandboxDemand d = Demand();
  d.image = "python:3.12";
  // b holds it, even though it is busier.
  EXPECT_EQ(Place(d, {a, b}, {On("b"), On("b")}).node, "b");
  d.image = "python:3.12@sha256:abc";
  EXPECT_EQ(Place(d, {a, b}, {On("b")}).node, "b");
  d.image = "base";  // untagged is :latest
  EXPECT_EQ(Place(d, {a, b, c}, {On("c")}).node, "c");
  d.image = "other";
  EXPECT_EQ(Place(d, {a, b}, {On("a")}).node, "b");
}

TEST(PlaceTest, APoolsMembersAreSpreadBeforeLoadIsBalanced) {
  SandboxDemand member = Demand();
  member.pool = "default/py";
  SandboxDemand other = Demand();
  other.pool = "default/js";
  std::vector<NodeFacts> nodes{Node("a"), Node("b")};
  // a is less loaded but already holds a member of the pool.
  std::vector<PlacedSandbox> placed{On("a", member), On("b", other), On("b", other)};
  EXPECT_EQ(Place(member, nodes, placed).node, "b");
  // A sandbox of no pool just goes where the load is least.
  EXPECT_EQ(Place(Demand(), nodes, placed).node, "a");
  // Placing five members one after the other alternates.
  placed.clear();
  std::vector<std::string> where;
  for (int i = 0; i < 4; ++i) {
    auto d = Place(member, nodes, placed);
    where.push_back(d.node);
    placed.push_back(On(d.node, member));
  }
  EXPECT_EQ(where, (std::vector<std::string>{"a", "b", "a", "b"}));
}

TEST(PlaceTest, DemandIsWhatKubernetesSchedulesRequestsThenLimitsElseNothing) {
  api::Object sandbox = store::testing::MakeSandbox("s", {{api::labels::kSandboxPool, "py"}});
  api::PodTemplateSpec pod;
  pod.spec.containers.resize(1);
  pod.spec.containers[0].image = "python:3.12";
  pod.spec.runtime_class_name = "gvisor";
  // No resources named: it runs under the default limits but reserves nothing (BestEffort).
  SandboxDemand d = DemandOf(sandbox, &pod);
  EXPECT_EQ(d.cpu_millicores, 0);
  EXPECT_EQ(d.memory_bytes, 0);
  EXPECT_EQ(d.image, "python:3.12");
  EXPECT_EQ(d.runtime_class, "gvisor");
  EXPECT_EQ(d.pool, "default/py");
  // Requests win over limits; a limit alone is the request.
  pod.spec.containers[0].resources.requests["cpu"] = *api::Quantity::Parse("500m");
  pod.spec.containers[0].resources.limits["cpu"] = *api::Quantity::Parse("2");
  pod.spec.containers[0].resources.limits["memory"] = *api::Quantity::Parse("2Gi");
  d = DemandOf(sandbox, &pod);
  EXPECT_EQ(d.cpu_millicores, 500);
  EXPECT_EQ(d.memory_bytes, 2 * kGi);
  // Unresolvable template: nothing reserved, no pool.
  d = DemandOf(store::testing::MakeSandbox("t"), nullptr);
  EXPECT_EQ(d.cpu_millicores, 0);
  EXPECT_EQ(d.pool, "");
}

TEST(PlaceTest, NodeFactsReadAllocatableThenCapacity) {
  api::Object node;
  node.api_version = api::kWarrenApiVersion;
  node.kind = "Node";
  node.metadata.name = "n1";
  api::NodeSpec spec;
  spec.unschedulable = true;
  api::EncodeSpec(spec, node);
  api::NodeStatus st;
  st.capacity["cpu"] = api::Quantity::FromMilli(4000);
  st.capacity["memory"] = api::Quantity::FromValue(8 * kGi);
  st.capacity["sandboxes"] = api::Quantity::FromValue(100);
  st.allocatable["cpu"] = api::Quantity::FromMilli(3500);
  st.runtime_classes = {"native", "gvisor"};
  st.images.push_back({.names = {"base", "base@sha256:1"}, .size_bytes = 1});
  st.conditions.push_back({.type = "Ready", .status = "True"});
  api::EncodeStatus(st, node);
  NodeFacts f = NodeFactsOf(node);
  EXPECT_EQ(f.name, "n1");
  EXPECT_TRUE(f.ready);
  EXPECT_TRUE(f.unschedulable);
  EXPECT_EQ(f.cpu_millicores, 3500);
  EXPECT_EQ(f.memory_bytes, 8 * kGi);
  EXPECT_EQ(f.sandboxes, 100);
  EXPECT_EQ(f.runtime_classes, (std::vector<std::string>{"native", "gvisor"}));
  EXPECT_TRUE(f.images.contains("base@sha256:1"));
  st.conditions[0].status = "Unknown";
  api::EncodeStatus(st, node);
  EXPECT_FALSE(NodeFactsOf(node).ready);
}

}  // namespace
}  // namespace warren::controller
