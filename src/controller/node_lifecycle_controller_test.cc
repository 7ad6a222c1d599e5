#include "controller/node_lifecycle_controller.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/node.h"
#include "api/types/sandbox.h"
#include "base/testing/fake_clock.h"
#include "base/time_format.h"
#include "controller/testing/eventually.h"
#include "controller/testing/test_nodes.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
using testing::Eventually;
using testing::PutNode;
using testing::RenewNode;

class NodeLifecycleControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Fresh nodes, then the controller, whose start gives every node one grace.
    PutNode(store_.store(), {.name = "n1", .heartbeat = clock_.Now()});
    PutNode(store_.store(), {.name = "n2", .heartbeat = clock_.Now()});
  }
  void TearDown() override {
    if (controller_) controller_->Stop();
  }
  void StartController(NodeLifecycleOptions options = {}) {
    options.period = 10ms;
    controller_ = std::make_unique<NodeLifecycleController>(store_.store(), clock_, &events_,
                                                            std::move(options));
    ASSERT_TRUE(controller_->Start().ok());
  }
  // A sandbox the node `node` runs, in `phase`.
  void RunningOn(const std::string& name, const std::string& node,
                 const std::string& phase = "Running") {
    auto created = store_->Create(store::testing::MakeSandbox(name));
    ASSERT_TRUE(created.ok()) << created.status();
    created->status() = {{"phase", phase},
                         {"nodeName", node},
                         {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}};
    ASSERT_TRUE(store_->UpdateStatus(*created).ok());
  }
  api::SandboxStatus Sandbox(const std::string& name) {
    return api::DecodeStatus<api::SandboxStatus>(
               store_->Get(api::SandboxKind(), "default", name).value())
        .value();
  }
  std::string SandboxReady(const std::string& name) {
    auto st = Sandbox(name);
    const api::Condition* c = api::FindCondition(st.conditions, "Ready");
    return c ? c->status + "/" + c->reason + "/" + c->message : "";
  }
  std::string NodeReady(const std::string& name) {
    auto st = api::DecodeStatus<api::NodeStatus>(store_->Get(api::NodeKind(), "", name).value());
    const api::Condition* c = api::FindCondition(st->conditions, "Ready");
    return c ? c->status + "/" + c->reason + "/" + c->message : "";
  }
  // "kind/name: message" of every Event with `reason`.
  std::vector<std::string> Events(const std::string& reason) {
    std::vector<std::string> out;
    auto list = store_->List(api::EventKind(), {});
    if (!list.ok()) return out;
    for (auto& e : list->items) {
      const api::Json& body = std::as_const(e).body;
      if (body.value("reason", "") != reason) continue;
      const api::Json& involved = body.at("involvedObject");
      out.push_back(involved.value("kind", "") + "/" + involved.value("name", "") + ": " +
                    body.value("message", ""));
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  // Moves the clock and lets the controller look; then waits a few of its periods.
  void AdvanceAndSettle(std::chrono::milliseconds d) {
    clock_.Advance(d);
    controller_->Kick();
    std::this_thread::sleep_for(100ms);
  }

  base::FakeClock clock_;
  store::testing::TempStore store_;
  obs::EventRecorder events_{store_.store(), {.component = "node-lifecycle"}, clock_};
  std::unique_ptr<NodeLifecycleController> controller_;
};

TEST_F(NodeLifecycleControllerTest, AStaleNodeIsUnknownAndItsSandboxesAreLost) {
  const base::WallTime last = clock_.Now();
  RunningOn("a", "n1");
  RunningOn("b", "n1", "Paused");
  RunningOn("c", "n2");
  StartController();
  // n2 keeps renewing; n1 stops.
  for (int i = 0; i < 6; ++i) {
    AdvanceAndSettle(1s);
    RenewNode(store_.store(), "n2", clock_.Now());
  }
  const std::string at = base::FormatRfc3339(last);
  const std::string node_message = "node stopped renewing its heartbeat at " + at;
  ASSERT_TRUE(Eventually([&] {
    return NodeReady("n1") == "Unknown/NodeStatusUnknown/" + node_message;
  })) << NodeReady("n1");
  const std::string lost = "node n1 stopped renewing its heartbeat at " + at +
                           "; the sandbox's processes and memory are lost with it";
  ASSERT_TRUE(
      Eventually([&] { return Sandbox("a").phase == "Failed" && Sandbox("b").phase == "Failed"; }));
  EXPECT_EQ(SandboxReady("a"), "False/NodeLost/" + lost);
  EXPECT_EQ(SandboxReady("b"), "False/NodeLost/" + lost);
  EXPECT_EQ(Sandbox("a").message, lost);
  EXPECT_EQ(Sandbox("a").node_name, "n1");
  // The renewing node and its sandbox are untouched.
  EXPECT_EQ(NodeReady("n2"), "True/AgentRunning/the node agent is running");
  EXPECT_EQ(Sandbox("c").phase, "Running");
  ASSERT_TRUE(Eventually([&] { return Events("NodeLost").size() == 2; }));
  EXPECT_EQ(Events("NodeLost"),
            (std::vector<std::string>{"Sandbox/a: " + lost, "Sandbox/b: " + lost}));
  EXPECT_EQ(Events("NodeStatusUnknown"), (std::vector<std::string>{"Node/n1: " + node_message}));
}

// Deleting a lost node's sandbox does not wait for the node's teardown: its finalizer goes.
TEST_F(NodeLifecycleControllerTest, ASandboxDeletedOnALostNodeGoesAtOnce) {
  RunningOn("a", "n1");
  RunningOn("c", "n2");
  for (const char* name : {"a", "c"}) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    ASSERT_TRUE(o.ok());
    o->AddFinalizer(api::finalizers::kSandbox);
    ASSERT_TRUE(store_->Update(*o).ok());
  }
  StartController();
  for (int i = 0; i < 6; ++i) {
    AdvanceAndSettle(1s);
    RenewNode(store_.store(), "n2", clock_.Now());
  }
  ASSERT_TRUE(Eventually([&] { return Sandbox("a").phase == "Failed"; }));
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "a").ok());
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "c").ok());
  ASSERT_TRUE(Eventually([&] {
    return store_->Get(api::SandboxKind(), "default", "a").status().code() == StatusCode::kNotFound;
  })) << "the lost node's sandbox stayed Terminating";
  // A live node's sandbox waits for its own node's teardown.
  AdvanceAndSettle(1s);
  auto c = store_->Get(api::SandboxKind(), "default", "c");
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->metadata.deletion_timestamp);
  EXPECT_TRUE(c->HasFinalizer(api::finalizers::kSandbox));
}

TEST_F(NodeLifecycleControllerTest, FreshHeartbeatsChangeNothing) {
  RunningOn("a", "n1");
  StartController();
  for (int i = 0; i < 12; ++i) {
    AdvanceAndSettle(1s);
    RenewNode(store_.store(), "n1", clock_.Now());
    RenewNode(store_.store(), "n2", clock_.Now());
  }
  EXPECT_EQ(NodeReady("n1"), "True/AgentRunning/the node agent is running");
  EXPECT_EQ(Sandbox("a").phase, "Running");
  EXPECT_TRUE(Events("NodeLost").empty());
  EXPECT_TRUE(Events("NodeStatusUnknown").empty());
  // The same controller does act once the renewals stop.
  AdvanceAndSettle(6s);
  ASSERT_TRUE(Eventually([&] { return Sandbox("a").phase == "Failed"; }));
}

TEST_F(NodeLifecycleControllerTest, WithinGraceNothingHappensThenItDoes) {
  RunningOn("a", "n1");
  StartController({.grace = 5s});
  AdvanceAndSettle(5s);  // exactly the grace: not yet
  EXPECT_EQ(Sandbox("a").phase, "Running");
  EXPECT_EQ(NodeReady("n1"), "True/AgentRunning/");
  AdvanceAndSettle(1s);
  ASSERT_TRUE(Eventually([&] { return Sandbox("a").phase == "Failed"; }));
}

TEST_F(NodeLifecycleControllerTest, TerminalSandboxesAreLeftAsTheyAre) {
  RunningOn("done", "n1", "Succeeded");
  RunningOn("broken", "n1", "Failed");
  RunningOn("live", "n1");
  StartController();
  AdvanceAndSettle(10s);
  ASSERT_TRUE(Eventually([&] { return Sandbox("live").phase == "Failed"; }));
  EXPECT_EQ(Sandbox("done").phase, "Succeeded");
  EXPECT_EQ(SandboxReady("done"), "True//");
  EXPECT_EQ(Sandbox("broken").phase, "Failed");
  EXPECT_EQ(SandboxReady("broken"), "True//");
  ASSERT_TRUE(Eventually([&] { return Events("NodeLost").size() == 1; }));
}

TEST_F(NodeLifecycleControllerTest, ANodeThatComesBackIsLeftToItselfAndItsLostSandboxesStayLost) {
  RunningOn("a", "n1");
  StartController();
  AdvanceAndSettle(10s);
  ASSERT_TRUE(Eventually([&] { return Sandbox("a").phase == "Failed"; }));
  RenewNode(store_.store(), "n1", clock_.Now());
  RunningOn("b", "n1");  // placed after it came back
  for (int i = 0; i < 3; ++i) {
    AdvanceAndSettle(1s);
    RenewNode(store_.store(), "n1", clock_.Now());
  }
  EXPECT_EQ(NodeReady("n1"), "True/AgentRunning/the node agent is running");
  EXPECT_EQ(Sandbox("a").phase, "Failed");
  EXPECT_EQ(Sandbox("b").phase, "Running");
  // Only n1's loss (n2, which never renews here, is lost too).
  auto events = Events("NodeStatusUnknown");
  EXPECT_EQ(std::count_if(events.begin(), events.end(),
                          [](const std::string& e) { return e.starts_with("Node/n1:"); }),
            1);
}

TEST_F(NodeLifecycleControllerTest, NeverHeardFromAndExemptNodesAreNotJudged) {
  PutNode(store_.store(), {.name = "silent"});  // no heartbeat at all
  RunningOn("a", "silent");
  RunningOn("b", "n2");
  StartController({.exempt_nodes = {"n2"}});
  AdvanceAndSettle(60s);
  // n1 (not exempt, stale) is judged: proof the controller looked.
  ASSERT_TRUE(Eventually([&] { return NodeReady("n1").starts_with("Unknown/"); }));
  EXPECT_EQ(Sandbox("a").phase, "Running");
  EXPECT_EQ(Sandbox("b").phase, "Running");
  EXPECT_EQ(NodeReady("silent"), "True/AgentRunning/");
  EXPECT_EQ(NodeReady("n2"), "True/AgentRunning/");
}

TEST_F(NodeLifecycleControllerTest, AControllerThatStartsLateGivesNodesOneGrace) {
  RunningOn("a", "n1");
  clock_.Advance(60s);  // the nodes' heartbeats are a minute old when it starts
  StartController();
  AdvanceAndSettle(2s);
  EXPECT_EQ(Sandbox("a").phase, "Running");
  RenewNode(store_.store(), "n1", clock_.Now());
  AdvanceAndSettle(4s);  // past the grace since start; n1 renewed 4 s ago, n2 never
  ASSERT_TRUE(Eventually([&] { return NodeReady("n2").starts_with("Unknown/"); }));
  EXPECT_EQ(Sandbox("a").phase, "Running");
  EXPECT_EQ(NodeReady("n1"), "True/AgentRunning/the node agent is running");
}

}  // namespace
}  // namespace warren::controller
