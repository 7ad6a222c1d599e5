// `warren cordon|uncordon|drain` against a real `warren server` process. No node agent runs:
// Nodes are created and sandboxes placed on them (status.nodeName, Running, Ready) by writing
// what the node agent would, with the admin key.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "api/json.h"
#include "process.h"

namespace warren::testing {
namespace {

using api::Json;
using namespace std::chrono_literals;

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class ServerDrain : public ::testing::Test {
 protected:
  Json Call(const std::string& method, const std::string& target, const Json& body = Json(),
            int want = 0) {
    net::ClientRequest req;
    req.method = method;
    req.target = target;
    if (!body.is_null()) {
      req.body = body.dump();
      req.headers.Set("Content-Type",
                      method == "PATCH" ? "application/merge-patch+json" : "application/json");
    }
    auto resp = s_.http().Do(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    if (!resp.ok()) return Json();
    if (want != 0) {
      EXPECT_EQ(resp->status, want) << method << " " << target << ": " << resp->body;
    }
    auto j = api::ParseJson(resp->body);
    return j.ok() ? *j : Json();
  }
  void MakeNode(const std::string& name) {
    Call("POST", "/apis/warren.dev/v1alpha1/nodes",
         {{"apiVersion", "warren.dev/v1alpha1"}, {"kind", "Node"}, {"metadata", {{"name", name}}}},
         201);
  }
  bool Cordoned(const std::string& node) {
    Json spec = Call("GET", "/apis/warren.dev/v1alpha1/nodes/" + node, Json(), 200)["spec"];
    return spec.is_object() && spec.value("unschedulable", false);
  }
  std::string Sbx(const std::string& name) {
    return "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes/" + name;
  }
  // A sandbox of team-a on `node`, in `phase` (Ready when Running, unless told).
  void Place(const std::string& name, const std::string& node, Json labels,
             const std::string& phase = "Running", bool ready = true) {
    Call("POST", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes",
         {{"apiVersion", "agents.kruise.io/v1alpha1"},
          {"kind", "Sandbox"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec",
           {{"template", {{"spec", {{"containers", {{{"name", "main"}, {"image", "base"}}}}}}}}}}},
         201);
    SetReady(name, ready, node, phase);
  }
  void SetReady(const std::string& name, bool ready, const std::string& node = "node-a",
                const std::string& phase = "Running") {
    Call("PATCH", Sbx(name) + "/status",
         {{"status",
           {{"phase", phase},
            {"nodeName", node},
            {"conditions", {{{"type", "Ready"}, {"status", ready ? "True" : "False"}}}}}}},
         200);
  }
  bool Exists(const std::string& name) {
    net::ClientRequest req;
    req.method = "GET";
    req.target = Sbx(name);
    auto resp = s_.http().Do(req);
    return resp.ok() && resp->status == 200;
  }
  std::vector<std::string> NodeEvents(const std::string& node, const std::string& reason) {
    std::vector<std::string> out;
    Json list = Call("GET", "/apis/warren.dev/v1alpha1/namespaces/default/events");
    for (const Json& e : list.value("items", Json::array())) {
      if (e["involvedObject"].value("name", "") == node && e.value("reason", "") == reason) {
        out.push_back(e.value("message", ""));
      }
    }
    return out;
  }
  void MakeBudget(int max_unavailable) {
    Json budget = Json::parse(R"({"apiVersion": "policy.kruise.io/v1alpha1",
        "kind": "PodUnavailableBudget", "metadata": {"name": "pub-x"},
        "spec": {"selector": {"matchExpressions": [{"key": "grp", "operator": "Exists"}]},
                 "podGroupPolicy": {"groupLabelKey": "grp"}}})");
    budget["spec"]["maxUnavailable"] = max_unavailable;
    Call("POST", "/apis/policy.kruise.io/v1alpha1/namespaces/team-a/podunavailablebudgets", budget,
         201);
  }

  ServerProcess s_;
};

TEST_F(ServerDrain, CordonAndUncordonSetUnschedulable) {
  MakeNode("node-b");
  CommandResult c = s_.Cli({"cordon", "node-b"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.out, "node.warren.dev/node-b cordoned\n");
  EXPECT_TRUE(Cordoned("node-b"));
  EXPECT_EQ(s_.Cli({"cordon", "node-b"}).out, "node.warren.dev/node-b already cordoned\n");
  CommandResult u = s_.Cli({"uncordon", "node-b"});
  ASSERT_EQ(u.exit_code, 0) << u.err;
  EXPECT_EQ(u.out, "node.warren.dev/node-b uncordoned\n");
  EXPECT_FALSE(Cordoned("node-b"));
  CommandResult missing = s_.Cli({"cordon", "node-z"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_TRUE(Contains(missing.err, "not found")) << missing.err;
}

// A node holding part of a group: the drain evicts what it may, waits on the budget and says so
// (output and Events), gives up at --timeout listing what is left, and, run again, finishes once
// the other group is available again; then once a budget is loosened.
TEST_F(ServerDrain, ADrainWaitsOnTheGroupBudgetAndSaysWhy) {
  for (const char* n : {"node-a", "node-b", "node-c"}) MakeNode(n);
  Place("g1-a", "node-b", {{"grp", "g1"}});
  Place("g1-b", "node-a", {{"grp", "g1"}});
  Place("g2-a", "node-a", {{"grp", "g2"}}, "Running", /*ready=*/false);
  Place("g2-b", "node-a", {{"grp", "g2"}});
  Place("solo", "node-b", Json::object());
  Place("done", "node-b", Json::object(), "Succeeded", false);
  MakeBudget(1);

  // --dry-run: changes nothing, says what would happen.
  CommandResult dry = s_.Cli({"drain", "node-b", "--dry-run"});
  ASSERT_EQ(dry.exit_code, 0) << dry.err;
  EXPECT_TRUE(Contains(dry.out, "sandbox team-a/solo would be evicted (dry run)")) << dry.out;
  EXPECT_TRUE(Contains(dry.out, "sandbox team-a/g1-a would wait (dry run): Cannot evict sandbox"))
      << dry.out;
  EXPECT_TRUE(Exists("solo"));
  EXPECT_FALSE(Cordoned("node-b"));

  const std::string why =
      "Cannot evict sandbox as it would violate the sandbox's disruption budget team-a/pub-x: "
      "group g1 of 2 would be unavailable, 1 group(s) already unavailable (g2: sandbox g2-a is "
      "not Ready), maxUnavailable 1";
  CommandResult timed_out = s_.Cli({"drain", "node-b", "--timeout", "3s"});
  EXPECT_EQ(timed_out.exit_code, 1) << timed_out.out << timed_out.err;
  EXPECT_TRUE(Contains(timed_out.out, "node.warren.dev/node-b cordoned\n")) << timed_out.out;
  EXPECT_TRUE(Contains(timed_out.out, "sandbox team-a/solo evicted\n")) << timed_out.out;
  EXPECT_TRUE(Contains(timed_out.out, "sandbox team-a/g1-a waits: " + why + "\n")) << timed_out.out;
  EXPECT_FALSE(Contains(timed_out.out, "team-a/done")) << "a finished sandbox is left alone";
  EXPECT_TRUE(Contains(timed_out.err,
                       "timed out after 3s draining node \"node-b\"; 1 "
                       "sandbox(es) left:\n  sandbox team-a/g1-a: " +
                           why))
      << timed_out.err;
  // The reason is printed once, not every second.
  size_t first = timed_out.out.find("waits:");
  EXPECT_EQ(timed_out.out.find("waits:", first + 1), std::string::npos) << timed_out.out;
  EXPECT_TRUE(Exists("g1-a"));
  EXPECT_FALSE(Exists("solo"));
  EXPECT_TRUE(Exists("done"));
  std::vector<std::string> waiting = NodeEvents("node-b", "DrainWaiting");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0], "Sandbox team-a/g1-a waits: " + why);

  // Run again with no limit; the other group heals while it waits, and the drain finishes.
  CommandResult drained;
  std::thread drain([&] { drained = s_.Cli({"drain", "node-b"}); });
  std::this_thread::sleep_for(2500ms);
  EXPECT_TRUE(Exists("g1-a")) << "still waiting";
  SetReady("g2-a", true);
  drain.join();
  EXPECT_EQ(drained.exit_code, 0) << drained.out << drained.err;
  EXPECT_TRUE(Contains(drained.out, "node.warren.dev/node-b already cordoned\n")) << drained.out;
  EXPECT_TRUE(Contains(drained.out, "sandbox team-a/g1-a waits: " + why)) << drained.out;
  EXPECT_TRUE(Contains(drained.out, "sandbox team-a/g1-a evicted\n")) << drained.out;
  EXPECT_TRUE(drained.out.ends_with("node.warren.dev/node-b drained\n")) << drained.out;
  EXPECT_FALSE(Exists("g1-a"));
  EXPECT_EQ(NodeEvents("node-b", "DrainEvicted").size(), 2u);

  // node-c holds part of g3 while g2 is down again: the drain waits until the budget allows two
  // groups down.
  Place("g3-a", "node-c", {{"grp", "g3"}});
  Place("g3-b", "node-a", {{"grp", "g3"}});
  SetReady("g2-a", false);
  std::thread drain_c([&] { drained = s_.Cli({"drain", "node-c"}); });
  std::this_thread::sleep_for(2500ms);
  EXPECT_TRUE(Exists("g3-a")) << "still waiting";
  Call("PATCH", "/apis/policy.kruise.io/v1alpha1/namespaces/team-a/podunavailablebudgets/pub-x",
       {{"spec", {{"maxUnavailable", 2}}}}, 200);
  drain_c.join();
  EXPECT_EQ(drained.exit_code, 0) << drained.out << drained.err;
  EXPECT_TRUE(Contains(drained.out, "sandbox team-a/g3-a waits: Cannot evict sandbox"))
      << drained.out;
  EXPECT_TRUE(Contains(drained.out, "sandbox team-a/g3-a evicted\n")) << drained.out;
  EXPECT_FALSE(Exists("g3-a"));
}

}  // namespace
}  // namespace warren::testing
