// Nobody reaches what is not theirs: every route of a real `warren server` (resource API, watch,
// logs, E2B, metrics) refuses an anonymous caller, shows one team nothing of another's (404,
// never 403), and keeps a team key inside its sandbox (no hostPath, no control-plane keys, no
// status writes). The README's "Security model" lists what these tests hold it to.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <set>

#include "api/json.h"
#include "process.h"
#include "tenancy_fixture.h"

namespace warren::testing {
namespace {

using api::Json;

TEST_F(TenancyTest, AnAnonymousCallerIsRefusedEverywhereButTheHealthChecksAndThePage) {
  MakeTeamObjects(team_b_key_, "team-b");
  std::string sbx = "/apis/agents.kruise.io/v1alpha1/namespaces/team-b/sandboxes";
  std::string id = SandboxIdOf("team-b", "box");
  for (auto [method, target] : std::vector<std::pair<std::string, std::string>>{
           {"GET", "/apis/agents.kruise.io/v1alpha1/sandboxes"},
           {"GET", sbx},
           {"GET", sbx + "/box"},
           {"GET", sbx + "/box/status"},
           {"GET", sbx + "/box/log"},
           {"GET", sbx + "?watch=1"},
           {"POST", sbx},
           {"PATCH", sbx + "/box"},
           {"DELETE", sbx + "/box"},
           {"GET", "/apis"},
           {"GET", "/apis/warren.dev/v1alpha1/nodes"},
           {"GET", "/metrics"},
           {"GET", "/version"},
           {"GET", "/whoami"},
           {"GET", "/api-keys"},
           {"GET", "/v2/sandboxes"},
           {"POST", "/v2/sandboxes"},
           {"GET", "/sandboxes/" + id},
           {"DELETE", "/sandboxes/" + id},
           {"POST", "/sandboxes/" + id + "/pause"},
           {"GET", "/templates"},
       }) {
    Reply r = Call(method, target, "", method == "GET" || method == "DELETE" ? "" : "{}");
    EXPECT_EQ(r.status, 401) << method << " " << target << ": " << r.text;
    EXPECT_TRUE(r.headers.Get("WWW-Authenticate").has_value()) << method << " " << target;
  }
  // A key that is not one (well-formed or not) is as good as none.
  EXPECT_EQ(Call("GET", sbx, "e2b_" + std::string(40, '0')).status, 401);
  EXPECT_EQ(Call("GET", sbx, "hunter2").status, 401);
  // The resource API answers in Kubernetes' form, the E2B API in E2B's.
  EXPECT_EQ(Call("GET", sbx, "").json.value("kind", ""), "Status");
  EXPECT_EQ(Call("GET", "/v2/sandboxes", "").json.value("code", 0), 401);
  for (const char* open : {"/health", "/healthz", "/readyz", "/ui/", "/ui/app.js"}) {
    EXPECT_EQ(Call("GET", open, "").status, 200) << open;
  }
  // Nothing was created by the anonymous POSTs.
  EXPECT_EQ(Items(Call("GET", sbx, team_b_key_)).size(), 1u);
}

TEST_F(TenancyTest, AnotherTeamsObjectsAre404OnEveryResourceRoute) {
  MakeTeamObjects(team_b_key_, "team-b");
  MakeTeamObjects(team_a_key_, "team-a");
  const std::string base = "/apis/agents.kruise.io/v1alpha1/namespaces/team-b";
  for (auto [plural, name] :
       std::vector<std::pair<std::string, std::string>>{{"sandboxes", "box"},
                                                        {"sandboxsets", "pool"},
                                                        {"sandboxtemplates", "tpl"},
                                                        {"checkpoints", "cp"},
                                                        {"sandboxclaims", "claim"},
                                                        {"trafficpolicies", "tp"},
                                                        {"poolautoscalers", "pas"}}) {
    std::string object = base + "/" + plural + "/" + name;
    // The owner sees it: the refusals below are about who asks, not about what is there.
    ASSERT_EQ(Call("GET", object, team_b_key_).status, 200) << object;
    for (auto [method, target, body] :
         std::vector<std::tuple<std::string, std::string, std::string>>{
             {"GET", object, ""},
             {"PUT", object, Call("GET", object, team_b_key_).text},
             {"PATCH", object, R"({"metadata":{"labels":{"x":"y"}}})"},
             {"DELETE", object, ""},
             {"GET", object + "/status", ""},
             {"GET", base + "/" + plural, ""},
             {"POST", base + "/" + plural, R"({"metadata":{"name":"intruder"}})"},
         }) {
      Reply r = Call(method, target, team_a_key_, body, "application/merge-patch+json");
      EXPECT_EQ(r.status, 404) << method << " " << target << ": " << r.text;
      EXPECT_EQ(r.json.value("reason", ""), "NotFound") << r.text;
      EXPECT_EQ(r.text.find("forbidden"), std::string::npos) << r.text;
    }
    // A list across namespaces is the caller's own namespace.
    std::set<std::string> namespaces;
    for (const Json& item :
         Items(Call("GET", "/apis/agents.kruise.io/v1alpha1/" + plural, team_a_key_))) {
      namespaces.insert(item["metadata"].value("namespace", ""));
    }
    EXPECT_EQ(namespaces, std::set<std::string>{"team-a"}) << plural;
  }
  // Still there, untouched.
  EXPECT_EQ(Call("GET", base + "/sandboxes/box", team_b_key_).status, 200);
  EXPECT_FALSE(
      Call("GET", base + "/sandboxes/box", team_b_key_).json["metadata"]["labels"].contains("x"));
  // The log of another team's sandbox, too.
  EXPECT_EQ(Call("GET", base + "/sandboxes/box/log", team_a_key_).status, 404);
  // The admin sees both.
  std::set<std::string> all;
  for (const Json& item :
       Items(Call("GET", "/apis/agents.kruise.io/v1alpha1/sandboxes", admin_key_))) {
    all.insert(item["metadata"].value("namespace", ""));
  }
  EXPECT_TRUE(all.contains("team-a") && all.contains("team-b"));
}

TEST_F(TenancyTest, AWatchAcrossNamespacesCarriesOnlyTheCallersObjects) {
  MakeTeamObjects(team_b_key_, "team-b");
  std::vector<Json> events;
  std::string buffer;
  std::thread later([&] {
    // Once the replay is out, a new object of the caller's ends the watch below.
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    CreateSandbox(team_a_key_, "team-a", "marker");
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    CreateSandbox(team_b_key_, "team-b", "hidden-after");
    CreateSandbox(team_a_key_, "team-a", "end");
  });
  net::ClientRequest req;
  req.target = "/apis/agents.kruise.io/v1alpha1/sandboxes?watch=1";
  req.headers.Set("Authorization", "Bearer " + team_a_key_);
  auto client = net::HttpClient::ForAddress(server_->address());
  ASSERT_TRUE(client.ok());
  auto resp = (*client)->DoStreaming(req, nullptr, [&](std::string_view data) {
    buffer.append(data);
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      auto e = api::ParseJson(buffer.substr(0, nl));
      buffer.erase(0, nl + 1);
      if (e.ok()) events.push_back(*e);
      if (e.ok() && (*e)["object"]["metadata"].value("name", "") == "end") return false;
    }
    return true;
  });
  later.join();
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_GE(events.size(), 2u);
  for (const Json& e : events) {
    EXPECT_EQ(e["object"]["metadata"].value("namespace", ""), "team-a") << e.dump();
  }
}

TEST_F(TenancyTest, AnotherTeamsSandboxIs404OnEveryE2bRoute) {
  MakeTeamObjects(team_b_key_, "team-b");
  std::string id = SandboxIdOf("team-b", "box");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(Call("GET", "/sandboxes/" + id, team_b_key_).status, 200) << "the owner sees it";
  for (auto [method, target, body] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"GET", "/sandboxes/" + id, ""},
           {"DELETE", "/sandboxes/" + id, ""},
           {"POST", "/sandboxes/" + id + "/pause", "{}"},
           {"POST", "/sandboxes/" + id + "/resume", "{}"},
           {"POST", "/sandboxes/" + id + "/connect", R"({"timeout":10})"},
           {"POST", "/v2/sandboxes/" + id + "/connect", R"({"timeout":10})"},
           {"POST", "/sandboxes/" + id + "/timeout", R"({"timeout":10})"},
           {"POST", "/sandboxes/" + id + "/refreshes", R"({"duration":10})"},
           {"GET", "/sandboxes/" + id + "/metrics", ""},
           {"PUT", "/sandboxes/" + id + "/network", R"({"denyOut":["0.0.0.0/0"]})"},
           {"POST", "/sandboxes/" + id + "/snapshots", "{}"},
           {"POST", "/sandboxes/" + id + "/fork", "{}"},
       }) {
    Reply r = Call(method, target, team_a_key_, body);
    EXPECT_EQ(r.status, 404) << method << " " << target << ": " << r.text;
    EXPECT_EQ(r.json.value("code", 0), 404) << r.text;
  }
  EXPECT_TRUE(Call("GET", "/v2/sandboxes", team_a_key_).json.empty());
  EXPECT_EQ(Call("GET", "/sandboxes/" + id, team_b_key_).status, 200) << "still there";
}

TEST_F(TenancyTest, ATeamKeyStaysInsideItsSandbox) {
  const std::string ns = "/apis/agents.kruise.io/v1alpha1/namespaces/team-a";
  Json host_root = {{"name", "root"}, {"hostPath", {{"path", "/"}}}};
  Json pod = {
      {"spec",
       {{"containers", {{{"name", "main"}, {"image", "base"}}}}, {"volumes", {host_root}}}}};
  for (auto [plural, kind] :
       std::vector<std::pair<std::string, std::string>>{{"sandboxes", "Sandbox"},
                                                        {"sandboxsets", "SandboxSet"},
                                                        {"sandboxtemplates", "SandboxTemplate"}}) {
    Json o = {{"apiVersion", "agents.kruise.io/v1alpha1"},
              {"kind", kind},
              {"metadata", {{"name", "escape"}}},
              {"spec", {{"template", pod}}}};
    if (kind == "SandboxSet") o["spec"]["replicas"] = 0;
    Reply r = Call("POST", ns + "/" + plural, team_a_key_, o.dump());
    EXPECT_EQ(r.status, 403) << plural << ": " << r.text;
    EXPECT_NE(r.text.find("hostPath"), std::string::npos) << r.text;
    // An admin may (it is the operator's machine).
    o["metadata"]["namespace"] = "team-a";
    EXPECT_EQ(Call("POST", ns + "/" + plural, admin_key_, o.dump()).status, 201) << plural;
  }
  // Nor slipped in later.
  CreateSandbox(team_a_key_, "team-a", "mine");
  Reply patched = Call("PATCH", ns + "/sandboxes/mine", team_a_key_,
                       Json{{"spec", {{"template", pod}}}}.dump(), "application/merge-patch+json");
  EXPECT_EQ(patched.status, 403) << patched.text;

  // Keys the control plane owns: who it belongs to, its id, its secrets.
  MakeTeamObjects(team_b_key_, "team-b");
  std::string victim = SandboxIdOf("team-b", "box");
  Json taker = {
      {"apiVersion", "agents.kruise.io/v1alpha1"},
      {"kind", "Sandbox"},
      {"metadata", {{"name", "taker"}, {"labels", {{"agents.kruise.io/sandbox-id", victim}}}}},
      {"spec", {{"template", {{"spec", {{"containers", {{{"name", "m"}, {"image", "base"}}}}}}}}}}};
  EXPECT_EQ(Call("POST", ns + "/sandboxes", team_a_key_, taker.dump()).status, 403);
  // Not even an admin can take an id another sandbox holds.
  taker["metadata"]["namespace"] = "team-a";
  EXPECT_EQ(Call("POST", ns + "/sandboxes", admin_key_, taker.dump()).status, 409);
  for (auto [field, key] : std::vector<std::pair<std::string, std::string>>{
           {"annotations", "agents.kruise.io/owner"},
           {"annotations", "secrets.warren.dev/access-token"},
           {"annotations", "agents.kruise.io/runtime-access-token"},
           {"labels", "agents.kruise.io/sandbox-id"},
           {"labels", "agents.kruise.io/sandbox-claimed"}}) {
    Json patch = {{"metadata", {{field, {{key, "mine"}}}}}};
    Reply r = Call("PATCH", ns + "/sandboxes/mine", team_a_key_, patch.dump(),
                   "application/merge-patch+json");
    EXPECT_EQ(r.status, 403) << key << ": " << r.text;
  }
  // Nor removed wholesale: a patch that names no key yet nulls the whole map, or the metadata.
  Reply before = Call("GET", ns + "/sandboxes/mine", team_a_key_);
  ASSERT_EQ(before.status, 200) << before.text;
  for (auto [wipe, refused] : std::vector<std::pair<std::string, int>>{
           {R"({"metadata":{"annotations":null}})", 403},
           {R"({"metadata":{"labels":null}})", 403},
           {R"({"metadata":null})", 422}}) {  // it would lose the name and namespace too
    Reply r =
        Call("PATCH", ns + "/sandboxes/mine", team_a_key_, wipe, "application/merge-patch+json");
    EXPECT_EQ(r.status, refused) << wipe << ": " << r.text;
  }
  Json stripped = before.json;
  stripped["metadata"].erase("annotations");
  stripped["metadata"].erase("resourceVersion");
  Reply put = Call("PUT", ns + "/sandboxes/mine", team_a_key_, stripped.dump());
  EXPECT_EQ(put.status, 403) << put.text;
  Reply after = Call("GET", ns + "/sandboxes/mine", team_a_key_);
  EXPECT_EQ(after.json["metadata"]["annotations"], before.json["metadata"]["annotations"]);
  EXPECT_EQ(after.json["metadata"]["labels"], before.json["metadata"]["labels"]);
  // A patch that touches only what is the team's still works.
  Reply own = Call("PATCH", ns + "/sandboxes/mine", team_a_key_,
                   R"({"metadata":{"labels":{"app":"mine"}}})", "application/merge-patch+json");
  EXPECT_EQ(own.status, 200) << own.text;
  // Status is the node's and the controllers'.
  Reply status = Call("PATCH", ns + "/sandboxes/mine/status", team_a_key_,
                      R"({"status":{"phase":"Running"}})", "application/merge-patch+json");
  EXPECT_EQ(status.status, 403) << status.text;
  // Control-plane kinds are read-only, cluster-scoped ones are out of reach.
  Json event = {{"apiVersion", "warren.dev/v1alpha1"},
                {"kind", "Event"},
                {"metadata", {{"name", "fake"}}},
                {"involvedObject", {{"kind", "Sandbox"}, {"name", "mine"}}},
                {"reason", "Fake"}};
  EXPECT_EQ(
      Call("POST", "/apis/warren.dev/v1alpha1/namespaces/team-a/events", team_a_key_, event.dump())
          .status,
      403);
  Json quota = {{"apiVersion", "warren.dev/v1alpha1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "mine"}}},
                {"spec", {{"hard", {{"sandboxes", "1000"}}}}}};
  EXPECT_EQ(Call("POST", "/apis/warren.dev/v1alpha1/namespaces/team-a/resourcequotas", team_a_key_,
                 quota.dump())
                .status,
            403);
  EXPECT_EQ(Call("GET", "/apis/warren.dev/v1alpha1/nodes", team_a_key_).status, 403);
  // And a team key cannot make itself an admin, or a key of another team.
  EXPECT_EQ(Call("POST", "/api-keys", team_a_key_, R"({"team":"team-a","admin":true})").status,
            403);
  EXPECT_EQ(Call("POST", "/api-keys", team_a_key_, R"({"team":"team-b"})").status, 403);
}

TEST_F(TenancyTest, SecretsOnASandboxAreSealedForEveryReader) {
  CreateSandbox(team_a_key_, "team-a", "sealed");
  for (const std::string& key : {team_a_key_, admin_key_}) {
    Reply r =
        Call("GET", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes/sealed", key);
    ASSERT_EQ(r.status, 200) << r.text;
    const Json& ann = r.json["metadata"]["annotations"];
    ASSERT_TRUE(ann.contains("secrets.warren.dev/access-token")) << r.text;
    EXPECT_TRUE(ann["secrets.warren.dev/access-token"].get<std::string>().starts_with("v1."));
    EXPECT_FALSE(ann.contains("agents.kruise.io/runtime-access-token")) << r.text;
  }
  // Nor can the sealed value be carried to another object: it is bound to this one.
  Reply r = Call("GET", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes/sealed",
                 team_a_key_);
  std::string sealed = r.json["metadata"]["annotations"]["secrets.warren.dev/access-token"];
  Json copy = {
      {"apiVersion", "agents.kruise.io/v1alpha1"},
      {"kind", "Sandbox"},
      {"metadata",
       {{"name", "copy"},
        {"namespace", "team-a"},
        {"annotations", {{"secrets.warren.dev/access-token", sealed}}}}},
      {"spec", {{"template", {{"spec", {{"containers", {{{"name", "m"}, {"image", "base"}}}}}}}}}}};
  EXPECT_EQ(Call("POST", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes", team_a_key_,
                 copy.dump())
                .status,
            403);
}

// A PodUnavailableBudget is its team's: another team neither sees nor changes it, its status is
// the controller's, and another team's key cannot evict the sandboxes it protects (nor any
// other of that team's).
TEST_F(TenancyTest, DisruptionBudgetsAndEvictionsArePerTeam) {
  CreateSandbox(team_a_key_, "team-a", "box");
  Json pub = Json::parse(R"({"apiVersion": "policy.kruise.io/v1alpha1",
      "kind": "PodUnavailableBudget", "metadata": {"name": "pub"},
      "spec": {"selector": {"matchLabels": {"app": "x"}}, "maxUnavailable": 1}})");
  const std::string pubs =
      "/apis/policy.kruise.io/v1alpha1/namespaces/team-a/podunavailablebudgets";
  ASSERT_EQ(Call("POST", pubs, team_a_key_, pub.dump()).status, 201);
  EXPECT_EQ(Call("GET", pubs + "/pub", team_a_key_).status, 200);
  EXPECT_EQ(Call("GET", pubs + "/pub", team_b_key_).status, 404);
  EXPECT_EQ(Call("GET", pubs, team_b_key_).status, 404);
  EXPECT_EQ(Call("PATCH", pubs + "/pub", team_b_key_, R"({"spec":{"maxUnavailable":5}})").status,
            404);
  EXPECT_EQ(Call("DELETE", pubs + "/pub", team_b_key_).status, 404);
  EXPECT_TRUE(
      Items(Call("GET", "/apis/policy.kruise.io/v1alpha1/podunavailablebudgets", team_b_key_))
          .empty());
  EXPECT_EQ(Call("POST", "/apis/policy.kruise.io/v1alpha1/namespaces/team-b/podunavailablebudgets",
                 team_a_key_, pub.dump())
                .status,
            404);
  EXPECT_EQ(
      Call("PATCH", pubs + "/pub/status", team_a_key_, R"({"status":{"unavailableAllowed":9}})")
          .status,
      403);
  const std::string eviction = "/namespaces/team-a/sandboxes/box/eviction";
  EXPECT_EQ(Call("POST", "/apis/agents.kruise.io/v1alpha1" + eviction, team_b_key_, "{}").status,
            404);
  EXPECT_EQ(Call("POST", "/api/v1" + eviction, team_b_key_, "{}").status, 404);
  EXPECT_EQ(Call("POST", "/api/v1" + eviction, "", "{}").status, 401);
  EXPECT_EQ(
      Call("GET", "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxes/box", team_a_key_)
          .status,
      200);
  EXPECT_EQ(Call("POST", "/api/v1" + eviction, team_a_key_, "{}").status, 201);
}

// An ImagePullJob and an AdvancedCronJob are their team's: another team neither sees nor
// deletes them, and their status (the nodes' progress, the last firing) is the control plane's.
TEST_F(TenancyTest, ImagePullAndCronJobsArePerTeamAndTheirStatusIsTheControlPlanes) {
  Json job = {{"apiVersion", "apps.kruise.io/v1alpha1"},
              {"kind", "ImagePullJob"},
              {"metadata", {{"name", "warm"}}},
              {"spec", {{"image", "registry.invalid:5000/app:1"}, {"parallelism", 0}}}};
  const std::string jobs = "/apis/apps.kruise.io/v1alpha1/namespaces/team-a/imagepulljobs";
  ASSERT_EQ(Call("POST", jobs, team_a_key_, job.dump()).status, 201);
  EXPECT_EQ(Call("GET", jobs + "/warm", team_a_key_).status, 200);
  EXPECT_EQ(Call("GET", jobs + "/warm", team_b_key_).status, 404);
  EXPECT_EQ(Call("DELETE", jobs + "/warm", team_b_key_).status, 404);
  EXPECT_TRUE(
      Items(Call("GET", "/apis/apps.kruise.io/v1alpha1/imagepulljobs", team_b_key_)).empty());
  Reply status = Call("PATCH", jobs + "/warm/status", team_a_key_,
                      R"({"status":{"succeeded":1,"message":"job has completed"}})",
                      "application/merge-patch+json");
  EXPECT_EQ(status.status, 403) << status.text;
  EXPECT_EQ(Call("DELETE", jobs + "/warm", team_a_key_).status, 200);

  // So is an AdvancedCronJob (its templates act in its own namespace only).
  Json cron = {
      {"apiVersion", "apps.kruise.io/v1alpha1"},
      {"kind", "AdvancedCronJob"},
      {"metadata", {{"name", "nightly"}}},
      {"spec",
       {{"schedule", "0 3 * * *"},
        {"paused", true},
        {"template", {{"sandboxSetReplicasTemplate", {{"name", "pool"}, {"replicas", 2}}}}}}}};
  const std::string crons = "/apis/apps.kruise.io/v1alpha1/namespaces/team-a/advancedcronjobs";
  ASSERT_EQ(Call("POST", crons, team_a_key_, cron.dump()).status, 201);
  EXPECT_EQ(Call("GET", crons + "/nightly", team_a_key_).status, 200);
  EXPECT_EQ(Call("GET", crons + "/nightly", team_b_key_).status, 404);
  EXPECT_EQ(Call("DELETE", crons + "/nightly", team_b_key_).status, 404);
  EXPECT_TRUE(
      Items(Call("GET", "/apis/apps.kruise.io/v1alpha1/advancedcronjobs", team_b_key_)).empty());
  EXPECT_EQ(Call("PATCH", crons + "/nightly/status", team_a_key_,
                 R"({"status":{"lastScheduleTime":"2030-01-01T00:00:00Z"}})",
                 "application/merge-patch+json")
                .status,
            403);
}

// A SandboxUpdateOps acts in its own team's namespace only: another team cannot see or delete
// it, its status is the controller's, and its patch may not bring a hostPath volume into the
// team's sandboxes (the controller, an admin, would write it there).
TEST_F(TenancyTest, SandboxUpdateOpsArePerTeamAndTheirStatusIsTheControlPlanes) {
  Json ops = {{"apiVersion", "agents.kruise.io/v1alpha1"},
              {"kind", "SandboxUpdateOps"},
              {"metadata", {{"name", "up"}}},
              {"spec",
               {{"selector", {{"matchLabels", {{"app", "nothing"}}}}},
                {"paused", true},
                {"patch", {{"spec", {{"containers", {{{"name", "main"}, {"image", "b:2"}}}}}}}}}}};
  const std::string path = "/apis/agents.kruise.io/v1alpha1/namespaces/team-a/sandboxupdateops";
  ASSERT_EQ(Call("POST", path, team_a_key_, ops.dump()).status, 201);
  EXPECT_EQ(Call("GET", path + "/up", team_a_key_).status, 200);
  EXPECT_EQ(Call("GET", path + "/up", team_b_key_).status, 404);
  EXPECT_EQ(Call("DELETE", path + "/up", team_b_key_).status, 404);
  EXPECT_EQ(Call("PATCH", path + "/up", team_b_key_, R"({"spec":{"paused":false}})",
                 "application/merge-patch+json")
                .status,
            404);
  EXPECT_TRUE(
      Items(Call("GET", "/apis/agents.kruise.io/v1alpha1/sandboxupdateops", team_b_key_)).empty());
  Reply status = Call("PATCH", path + "/up/status", team_a_key_,
                      R"({"status":{"phase":"Completed"}})", "application/merge-patch+json");
  EXPECT_EQ(status.status, 403) << status.text;
  Json host = ops;
  host["metadata"]["name"] = "host";
  host["spec"]["patch"]["spec"]["volumes"] = {{{"name", "etc"}, {"hostPath", {{"path", "/etc"}}}}};
  Reply refused = Call("POST", path, team_a_key_, host.dump());
  EXPECT_EQ(refused.status, 403) << refused.text;
  EXPECT_NE(refused.text.find("spec.patch.spec.volumes"), std::string::npos) << refused.text;
  EXPECT_EQ(Call("DELETE", path + "/up", team_a_key_).status, 200);
}

// The kinds this batch added (ResourceQuota) and the control plane's Events are per team too.
TEST_F(TenancyTest, AnotherTeamsQuotaAndEventsAre404) {
  Json quota = {{"apiVersion", "warren.dev/v1alpha1"},
                {"kind", "ResourceQuota"},
                {"metadata", {{"name", "limits"}, {"namespace", "team-b"}}},
                {"spec", {{"hard", {{"sandboxes", "5"}}}}}};
  const std::string quotas = "/apis/warren.dev/v1alpha1/namespaces/team-b/resourcequotas";
  ASSERT_EQ(Call("POST", quotas, admin_key_, quota.dump()).status, 201);
  EXPECT_EQ(Call("GET", quotas + "/limits", team_b_key_).status, 200) << "its own team reads it";
  Reply foreign = Call("GET", quotas + "/limits", team_a_key_);
  EXPECT_EQ(foreign.status, 404) << foreign.text;
  EXPECT_EQ(Call("GET", quotas, team_a_key_).status, 404);
  EXPECT_TRUE(Items(Call("GET", "/apis/warren.dev/v1alpha1/resourcequotas", team_a_key_)).empty());
  MakeTeamObjects(team_b_key_, "team-b");  // its claim and sandboxes write Events in team-b
  EXPECT_EQ(Call("GET", "/apis/warren.dev/v1alpha1/namespaces/team-b/events", team_a_key_).status,
            404);
  for (const Json& e : Items(Call("GET", "/apis/warren.dev/v1alpha1/events", team_a_key_))) {
    EXPECT_EQ(e["metadata"].value("namespace", ""), "team-a") << e.dump();
  }
}

TEST_F(TenancyTest, MetricsNeedAnAdminKeyOrTheLoopbackMetricsListener) {
  EXPECT_EQ(Call("GET", "/metrics", team_a_key_).status, 403);
  Reply admin = Call("GET", "/metrics", admin_key_);
  EXPECT_EQ(admin.status, 200);
  EXPECT_NE(admin.text.find("warren_"), std::string::npos);
  std::ifstream f(server_->data_dir() + "/metrics.port");
  int port = 0;
  ASSERT_TRUE(f >> port) << "the metrics listener wrote no port";
  auto metrics = net::HttpClient::ForAddress(fmt::format("127.0.0.1:{}", port));
  ASSERT_TRUE(metrics.ok());
  auto scraped = (*metrics)->Do({.target = "/metrics"});
  ASSERT_TRUE(scraped.ok()) << scraped.status();
  EXPECT_EQ(scraped->status, 200);
  EXPECT_NE(scraped->body.find("warren_"), std::string::npos);
  // It serves nothing else.
  auto other = (*metrics)->Do({.target = "/apis/agents.kruise.io/v1alpha1/sandboxes"});
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->status, 404);
}

TEST_F(TenancyTest, WhoamiNamesTheKeysTeamAndTheCliDefaultsToIt) {
  Reply me = Call("GET", "/whoami", team_a_key_);
  EXPECT_EQ(me.status, 200);
  EXPECT_EQ(me.json.value("team", ""), "team-a");
  EXPECT_FALSE(me.json.value("admin", true));
  CreateSandbox(team_a_key_, "team-a", "listed");
  CommandResult get = RunCommand({WARREN_BIN, "get", "sbx", "-o", "name"},
                                 {{"WARREN_SERVER", server_->address()},
                                  {"WARREN_API_KEY", team_a_key_},
                                  {"HOME", server_->data_dir() + "/nohome"}});
  EXPECT_EQ(get.exit_code, 0) << get.err;
  EXPECT_NE(get.out.find("listed"), std::string::npos) << get.out;
  // Without a key the CLI says what to do.
  CommandResult anonymous =
      RunCommand({WARREN_BIN, "get", "sbx"}, {{"WARREN_SERVER", server_->address()},
                                              {"WARREN_API_KEY", ""},
                                              {"E2B_API_KEY", ""},
                                              {"HOME", server_->data_dir() + "/nohome"}});
  EXPECT_NE(anonymous.exit_code, 0);
  EXPECT_NE(anonymous.err.find("Unauthorized"), std::string::npos) << anonymous.err;
}

}  // namespace
}  // namespace warren::testing
