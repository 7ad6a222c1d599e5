// The Eviction subresource of a real `warren server` (server library, real SQLite store, real
// HTTP on loopback) with its PodUnavailableBudget controller. No node agent runs: sandboxes are
// made Running and Ready (and placed on a node) by writing their status as the node would.

#include "server/eviction_api.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <thread>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/policy_kinds.h"
#include "api/typed_codec.h"
#include "api/types/event.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "net/http_client.h"
#include "server/server.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::server {
namespace {

using api::Json;
using namespace std::chrono_literals;

struct Reply {
  int status = 0;
  Json body;
};

class EvictionApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.port = 0;
    o.data_dir = dir_.path() + "/data";
    o.loop_threads = 2;
    auto server = Server::Create(o);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    InstallDisruption(*server_);
    ASSERT_TRUE(server_->Start().ok());
    admin_ = server_->keys().Create({.team = "default", .name = "admin", .admin = true})->key;
    team_a_ = server_->keys().Create({.team = "team-a", .name = "a"})->key;
    team_b_ = server_->keys().Create({.team = "team-b", .name = "b"})->key;
  }
  void TearDown() override {
    if (server_) server_->Stop(0ms);
  }
  store::Store& store() { return server_->store(); }

  Reply Call(const std::string& method, const std::string& target, const std::string& key,
             const std::string& body = "") {
    auto http = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string(server_->port()));
    EXPECT_TRUE(http.ok());
    net::ClientRequest req;
    req.method = method;
    req.target = target;
    req.headers.Set("Authorization", "Bearer " + key);
    if (!body.empty()) {
      req.headers.Set("Content-Type", "application/json");
      req.body = body;
    }
    req.timeout = 20s;
    auto resp = (*http)->Do(req);
    EXPECT_TRUE(resp.ok()) << resp.status();
    Reply r;
    if (!resp.ok()) return r;
    r.status = resp->status;
    if (auto doc = api::ParseJson(resp->body); doc.ok()) r.body = std::move(*doc);
    return r;
  }

  Reply Evict(const std::string& key, const std::string& ns, const std::string& name,
              bool dry_run = false) {
    Json body = {{"apiVersion", "policy/v1"},
                 {"kind", "Eviction"},
                 {"metadata", {{"name", name}, {"namespace", ns}}}};
    if (dry_run) body["deleteOptions"] = {{"dryRun", {"All"}}};
    return Call("POST",
                fmt::format("/apis/agents.kruise.io/v1alpha1/namespaces/{}/sandboxes/{}/eviction",
                            ns, name),
                key, body.dump());
  }

  // A sandbox Running (Ready unless told) on `node`.
  void MakeSandbox(const std::string& ns, const std::string& name,
                   std::map<std::string, std::string> labels, const std::string& node = "node-a",
                   bool ready = true) {
    auto created = store().Create(store::testing::MakeSandbox(name, std::move(labels), ns));
    ASSERT_TRUE(created.ok()) << created.status();
    SetReady(ns, name, ready, node);
  }
  void SetReady(const std::string& ns, const std::string& name, bool ready,
                const std::string& node = "node-a") {
    auto o = store().Get(api::SandboxKind(), ns, name);
    ASSERT_TRUE(o.ok());
    api::SandboxStatus st;
    st.phase = "Running";
    st.node_name = node;
    st.conditions.push_back({.type = "Ready", .status = ready ? "True" : "False"});
    api::EncodeStatus(st, *o);
    ASSERT_TRUE(store().UpdateStatus(*o).ok());
  }
  void MakeBudget(const std::string& ns, const std::string& name, const std::string& yaml_spec) {
    std::string doc = fmt::format(
        "apiVersion: policy.kruise.io/v1alpha1\nkind: PodUnavailableBudget\n"
        "metadata: {{name: {}, namespace: {}}}\nspec: {}\n",
        name, ns, yaml_spec);
    auto created = store().Create(api::ObjectFromJson(*api::ParseYaml(doc)).value());
    ASSERT_TRUE(created.ok()) << created.status();
  }
  void MakeNode(const std::string& name, bool cordoned) {
    api::Object o;
    o.api_version = "warren.dev/v1alpha1";
    o.kind = "Node";
    o.metadata.name = name;
    o.spec() = {{"unschedulable", cordoned}};
    ASSERT_TRUE(store().Create(o).ok());
  }
  api::Json BudgetStatus(const std::string& ns, const std::string& name) {
    auto o = store().Get(api::PodUnavailableBudgetKind(), ns, name);
    return o.ok() ? o->status() : Json();
  }
  bool Exists(const std::string& ns, const std::string& name) {
    return store().Get(api::SandboxKind(), ns, name).ok();
  }
  // Events about `object` with `reason`, across namespaces.
  std::vector<api::EventFields> Events(const std::string& object, const std::string& reason) {
    std::vector<api::EventFields> out;
    auto list = store().List(api::EventKind(), {});
    if (!list.ok()) return out;
    for (const auto& e : list->items) {
      auto f = api::DecodeTyped<api::EventFields>(e.body, "");
      if (f.ok() && f->involved_object.name == object && f->reason == reason) out.push_back(*f);
    }
    return out;
  }
  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }

  store::testing::TempDir dir_;
  std::unique_ptr<Server> server_;
  std::string admin_, team_a_, team_b_;
};

TEST_F(EvictionApiTest, AnEvictionTheBudgetAllowsIsRecordedAndDeletesTheNextIs429) {
  for (const char* n : {"a", "b", "c"}) MakeSandbox("team-a", n, {{"app", "web"}});
  MakeSandbox("team-a", "d", {{"app", "web"}}, "node-a", /*ready=*/false);
  MakeBudget("team-a", "pub-web", "{selector: {matchLabels: {app: web}}, minAvailable: 2}");

  Reply ok = Evict(team_a_, "team-a", "a");
  EXPECT_EQ(ok.status, 201) << ok.body;
  EXPECT_EQ(ok.body["kind"], "Status");
  EXPECT_EQ(ok.body["status"], "Success");
  EXPECT_FALSE(Exists("team-a", "a"));
  // Recorded before the delete; forgotten once the controller has seen the deletion.
  EXPECT_TRUE(Eventually([&] {
    api::Json s = BudgetStatus("team-a", "pub-web");
    return !s.contains("disruptedPods") && s.value("totalReplicas", 0) == 3;
  })) << BudgetStatus("team-a", "pub-web");

  Reply refused = Evict(team_a_, "team-a", "b");
  EXPECT_EQ(refused.status, 429) << refused.body;
  EXPECT_EQ(refused.body["reason"], "TooManyRequests");
  EXPECT_EQ(refused.body["code"], 429);
  const std::string message =
      "Cannot evict sandbox as it would violate the sandbox's disruption budget team-a/pub-web: "
      "sandbox b of 3 would be unavailable, 1 sandbox(es) already unavailable (sandbox d is not "
      "Ready), minAvailable 2";
  EXPECT_EQ(refused.body["message"], message);
  EXPECT_EQ(refused.body["details"]["causes"][0]["reason"], "DisruptionBudget");
  EXPECT_TRUE(Exists("team-a", "b"));
  // Said on the budget, once however often it is tried.
  EXPECT_EQ(Evict(team_a_, "team-a", "b").status, 429);
  auto told = Events("pub-web", "PubPreventPodDeletion");
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].count, 1);
  EXPECT_EQ(told[0].type, "Warning");
  EXPECT_EQ(told[0].message, "Eviction of sandbox b refused: " + message);
  // d not Ready may go: it uses none of the budget.
  EXPECT_EQ(Evict(team_a_, "team-a", "d").status, 201);

  // A sandbox no budget selects goes at once; one that is not there is 404.
  MakeSandbox("team-a", "free", {{"app", "other"}});
  EXPECT_EQ(Evict(team_a_, "team-a", "free").status, 201);
  EXPECT_EQ(Evict(team_a_, "team-a", "free").status, 404);
}

TEST_F(EvictionApiTest, ADryRunChangesNothing) {
  for (const char* n : {"a", "b"}) MakeSandbox("team-a", n, {{"app", "web"}});
  MakeBudget("team-a", "pub-web", "{selector: {matchLabels: {app: web}}, minAvailable: 1}");
  Reply r = Evict(team_a_, "team-a", "a", /*dry_run=*/true);
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_TRUE(Exists("team-a", "a"));
  EXPECT_FALSE(BudgetStatus("team-a", "pub-web").contains("disruptedPods"));
  EXPECT_EQ(Evict(team_a_, "team-a", "a").status, 201);
  EXPECT_EQ(Evict(team_a_, "team-a", "b", true).status, 429);
  EXPECT_TRUE(Events("pub-web", "PubPreventPodDeletion").empty()) << "a dry run tells nobody";
}

// The last slot, taken by many at once: exactly one eviction wins, in plain and in group mode.
TEST_F(EvictionApiTest, ConcurrentEvictionsNeverBothTakeTheLastSlot) {
  constexpr int kSandboxes = 8;
  for (int i = 0; i < kSandboxes; ++i)
    MakeSandbox("team-a", fmt::format("s{}", i), {{"app", "web"}});
  MakeBudget(
      "team-a", "pub-web",
      fmt::format("{{selector: {{matchLabels: {{app: web}}}}, minAvailable: {}}}", kSandboxes - 1));
  for (int g = 0; g < 4; ++g) {
    for (int i = 0; i < 2; ++i) {
      MakeSandbox("team-a", fmt::format("g{}m{}", g, i),
                  {{"app", "job"}, {"warren.dev/group", fmt::format("g{}", g)}});
    }
  }
  MakeBudget("team-a", "pub-job",
             "{selector: {matchLabels: {app: job}}, maxUnavailable: 1, "
             "podGroupPolicy: {groupLabelKey: warren.dev/group, groupSize: 2}}");

  auto race = [&](std::vector<std::string> names) {
    std::atomic<int> ready{0};
    std::vector<int> codes(names.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < names.size(); ++i) {
      threads.emplace_back([&, i] {
        ++ready;
        while (ready.load() < static_cast<int>(names.size())) std::this_thread::yield();
        codes[i] = Evict(team_a_, "team-a", names[i]).status;
      });
    }
    for (auto& t : threads) t.join();
    return codes;
  };
  std::vector<std::string> plain;
  for (int i = 0; i < kSandboxes; ++i) plain.push_back(fmt::format("s{}", i));
  std::vector<int> codes = race(plain);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 201), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 429), kSandboxes - 1);
  int left = 0;
  for (const auto& n : plain) left += Exists("team-a", n) ? 1 : 0;
  EXPECT_EQ(left, kSandboxes - 1);

  // One member of each group at once: one group may go down, so one eviction wins.
  codes = race({"g0m0", "g1m0", "g2m0", "g3m0"});
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 201), 1);
  EXPECT_EQ(std::count(codes.begin(), codes.end(), 429), 3);
  // The others may not go down; the group that went down (short of its size) may lose its
  // other member for free.
  std::string down;
  for (int g = 0; g < 4; ++g) {
    if (!Exists("team-a", fmt::format("g{}m0", g))) down = fmt::format("g{}", g);
  }
  ASSERT_FALSE(down.empty());
  EXPECT_EQ(Evict(team_a_, "team-a", down == "g0" ? "g1m1" : "g0m1").status, 429);
  EXPECT_EQ(Evict(team_a_, "team-a", down + "m1").status, 201);
}

TEST_F(EvictionApiTest, ATeamEvictsAndReadsBudgetsInItsOwnNamespaceOnly) {
  MakeSandbox("team-a", "a", {{"app", "web"}});
  MakeBudget("team-a", "pub-a", "{selector: {matchLabels: {app: web}}, maxUnavailable: 1}");
  const std::string pub = "/apis/policy.kruise.io/v1alpha1/namespaces/team-a/podunavailablebudgets";
  // Another team: not there, on every route.
  Reply evict = Evict(team_b_, "team-a", "a");
  EXPECT_EQ(evict.status, 404) << evict.body;
  EXPECT_EQ(Call("POST", "/api/v1/namespaces/team-a/sandboxes/a/eviction", team_b_, "{}").status,
            404);
  EXPECT_EQ(Call("GET", pub + "/pub-a", team_b_).status, 404);
  EXPECT_EQ(Call("GET", pub, team_b_).status, 404);
  EXPECT_EQ(Call("DELETE", pub + "/pub-a", team_b_).status, 404);
  Reply all = Call("GET", "/apis/policy.kruise.io/v1alpha1/podunavailablebudgets", team_b_);
  EXPECT_EQ(all.status, 200);
  EXPECT_TRUE(all.body["items"].empty()) << all.body;
  EXPECT_TRUE(Exists("team-a", "a"));
  // The owner reads its budget, cannot write its status (the controller's), and may create one.
  EXPECT_EQ(Call("GET", pub + "/pub-a", team_a_).status, 200);
  EXPECT_EQ(Call("PATCH", pub + "/pub-a/status", team_a_, R"({"status":{"unavailableAllowed":9}})")
                .status,
            403);
  Json mine = Json::parse(R"({"apiVersion": "policy.kruise.io/v1alpha1",
      "kind": "PodUnavailableBudget", "metadata": {"name": "pub-b"},
      "spec": {"selector": {"matchLabels": {"x": "y"}}, "maxUnavailable": "50%"}})");
  EXPECT_EQ(Call("POST", "/apis/policy.kruise.io/v1alpha1/namespaces/team-b/podunavailablebudgets",
                 team_b_, mine.dump())
                .status,
            201);
  EXPECT_EQ(Call("POST", pub, team_b_, mine.dump()).status, 404);
  // The shorter route, with the owner's key.
  EXPECT_EQ(Call("POST", "/api/v1/namespaces/team-a/sandboxes/a/eviction", team_a_, "").status,
            201);
}

TEST_F(EvictionApiTest, ARefusalOnACordonedNodeIsToldOnTheNodeAndTheWaitEnds) {
  MakeNode("node-b", /*cordoned=*/true);
  // Three groups of two; g1 has a member on node-b; g2 is down (a member not Ready).
  MakeSandbox("team-a", "g1-a", {{"grp", "g1"}}, "node-b");
  MakeSandbox("team-a", "g1-b", {{"grp", "g1"}}, "node-a");
  MakeSandbox("team-a", "g2-a", {{"grp", "g2"}}, "node-a", /*ready=*/false);
  MakeSandbox("team-a", "g2-b", {{"grp", "g2"}}, "node-a");
  MakeSandbox("team-a", "g3-a", {{"grp", "g3"}}, "node-a");
  MakeBudget("team-a", "pub-x",
             "{selector: {matchExpressions: [{key: grp, operator: Exists}]}, maxUnavailable: 1, "
             "podGroupPolicy: {groupLabelKey: grp}}");
  Reply r = Evict(admin_, "team-a", "g1-a");
  ASSERT_EQ(r.status, 429) << r.body;
  const std::string message =
      "Cannot evict sandbox as it would violate the sandbox's disruption budget team-a/pub-x: "
      "group g1 of 3 would be unavailable, 1 group(s) already unavailable (g2: sandbox g2-a is "
      "not Ready), maxUnavailable 1";
  EXPECT_EQ(r.body["message"], message);
  auto waiting = Events("node-b", "DrainWaiting");
  ASSERT_EQ(waiting.size(), 1u);
  EXPECT_EQ(waiting[0].message, "Sandbox team-a/g1-a waits: " + message);
  EXPECT_EQ(waiting[0].involved_object.kind, "Node");
  // A sandbox of a node not being drained says nothing on its node.
  MakeNode("node-a", false);
  EXPECT_EQ(Evict(admin_, "team-a", "g3-a").status, 429);
  EXPECT_TRUE(Events("node-a", "DrainWaiting").empty());

  // g2 heals: g1-a may go, and the node says so.
  SetReady("team-a", "g2-a", true);
  EXPECT_TRUE(Eventually([&] { return Evict(admin_, "team-a", "g1-a").status == 201; }));
  EXPECT_EQ(Events("node-b", "DrainEvicted").size(), 1u);
  EXPECT_EQ(Events("node-b", "DrainWaiting").size(), 1u);
}

}  // namespace
}  // namespace warren::server
