// The resource REST API of a real `warren server` process, over HTTP.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <mutex>
#include <thread>

#include "api/json.h"
#include "process.h"

namespace warren::testing {
namespace {

using namespace std::chrono_literals;
using api::Json;

constexpr const char* kSets = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets";
constexpr const char* kSandboxes = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes";

Json PoolJson(const std::string& name, int replicas) {
  return Json::parse(fmt::format(R"({{
    "apiVersion": "agents.kruise.io/v1alpha1", "kind": "SandboxSet",
    "metadata": {{"name": "{}"}},
    "spec": {{"replicas": {}, "template": {{"spec": {{"containers": [{{"name": "main", "image": "base"}}]}}}}}}}})",
                                 name, replicas));
}

struct Reply {
  int code = 0;
  Json body;
  std::string raw;
};

Reply Call(ServerProcess& s, const std::string& method, const std::string& target,
           const std::string& body = "", const std::string& content_type = "application/json") {
  net::ClientRequest req;
  req.method = method;
  req.target = target;
  req.body = body;
  if (!body.empty()) req.headers.Set("Content-Type", content_type);
  auto resp = s.http().Do(req);
  EXPECT_TRUE(resp.ok()) << resp.status();
  Reply r;
  if (!resp.ok()) return r;
  r.code = resp->status;
  r.raw = resp->body;
  auto j = api::ParseJson(resp->body);
  if (j.ok()) r.body = std::move(*j);
  return r;
}

TEST(ServerHttp, HealthReadyVersionAndDiscovery) {
  ServerProcess s;
  EXPECT_EQ(Call(s, "GET", "/healthz").raw, "ok");
  EXPECT_EQ(Call(s, "GET", "/readyz").code, 200);
  Reply v = Call(s, "GET", "/version");
  EXPECT_EQ(v.code, 200);
  EXPECT_EQ(v.body["gitVersion"].get<std::string>().front(), 'v');
  Reply d = Call(s, "GET", "/apis/agents.kruise.io/v1alpha1");
  ASSERT_EQ(d.code, 200);
  bool scale = false;
  for (const auto& r : d.body["resources"]) scale |= r["name"] == "sandboxsets/scale";
  EXPECT_TRUE(scale);
}

TEST(ServerHttp, CrudWithStatusAndScaleSubresources) {
  ServerProcess s;
  Reply created = Call(s, "POST", kSets, api::DumpJson(PoolJson("pool", 2)));
  ASSERT_EQ(created.code, 201) << created.raw;
  EXPECT_EQ(created.body["metadata"]["namespace"], "default");
  EXPECT_EQ(created.body["spec"]["updateStrategy"]["maxUnavailable"], "20%");
  std::string path = std::string(kSets) + "/pool";

  Reply status =
      Call(s, "PATCH", path + "/status", R"({"status": {"replicas": 2, "selector": "a=b"}})",
           "application/merge-patch+json");
  ASSERT_EQ(status.code, 200) << status.raw;
  EXPECT_EQ(status.body["metadata"]["generation"], 1);

  Reply scale = Call(s, "GET", path + "/scale");
  ASSERT_EQ(scale.code, 200) << scale.raw;
  EXPECT_EQ(scale.body["kind"], "Scale");
  EXPECT_EQ(scale.body["spec"]["replicas"], 2);
  // The pool controller may have rewritten the status with the set's real selector already.
  EXPECT_TRUE(scale.body["status"]["selector"] == "a=b" ||
              scale.body["status"]["selector"] ==
                  "agents.kruise.io/sandbox-pool=pool,agents.kruise.io/sandbox-claimed=false")
      << scale.raw;
  Reply scaled = Call(s, "PATCH", path + "/scale", R"({"spec": {"replicas": 7}})",
                      "application/merge-patch+json");
  ASSERT_EQ(scaled.code, 200) << scaled.raw;
  Reply got = Call(s, "GET", path);
  EXPECT_EQ(got.body["spec"]["replicas"], 7);
  EXPECT_EQ(got.body["metadata"]["generation"], 2);

  // PUT with the current resourceVersion, then the same (stale) one again. The pool
  // controller writes the status too, so the first PUT is retried from a fresh read.
  Json obj = got.body;
  Reply put;
  for (int attempt = 0; attempt < 10; ++attempt) {
    obj = Call(s, "GET", path).body;
    obj["metadata"]["labels"] = {{"tier", "gold"}};
    put = Call(s, "PUT", path, api::DumpJson(obj));
    if (put.code != 409) break;
  }
  ASSERT_EQ(put.code, 200) << put.raw;
  Reply stale = Call(s, "PUT", path, api::DumpJson(obj));
  EXPECT_EQ(stale.code, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");
  EXPECT_NE(stale.body["message"].get<std::string>().find(
                "Operation cannot be fulfilled on sandboxsets.agents.kruise.io \"pool\""),
            std::string::npos);

  // YAML bodies work too.
  Reply yaml = Call(s, "POST", kSets,
                    "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxSet\nmetadata: {name: y}\n"
                    "spec:\n  templateRef: {name: t}\n",
                    "application/yaml");
  EXPECT_EQ(yaml.code, 201) << yaml.raw;

  Reply deleted = Call(s, "DELETE", path);
  EXPECT_EQ(deleted.code, 200);
  EXPECT_EQ(Call(s, "GET", path).code, 404);
}

TEST(ServerHttp, BadInputGetsItsStatusCodeAndMessage) {
  ServerProcess s;
  ASSERT_EQ(Call(s, "POST", kSets, api::DumpJson(PoolJson("dup", 1))).code, 201);
  Reply first = Call(s, "GET", std::string(kSets) + "/dup");
  std::string old_rv = first.body["metadata"]["resourceVersion"];
  ASSERT_EQ(Call(s, "PATCH", std::string(kSets) + "/dup", R"({"spec":{"replicas":2}})",
                 "application/merge-patch+json")
                .code,
            200);
  Json invalid = PoolJson("bad", -1);
  Json wrong_ns = PoolJson("x", 1);
  wrong_ns["metadata"]["namespace"] = "other";
  std::string big = api::DumpJson(PoolJson("big", 1));
  big.insert(big.size() - 1, fmt::format(R"(,"pad":"{}")", std::string(4 << 20, 'x')));
  struct Case {
    std::string what, method, target, body, content_type;
    int code;
    std::string reason, message;
  };
  std::vector<Case> cases = {
      {"invalid JSON", "POST", kSets, R"({"apiVersion": )", "application/json", 400, "BadRequest",
       "invalid JSON"},
      {"invalid YAML", "POST", kSets, "kind: [SandboxSet\nmetadata: x\n", "application/yaml", 400,
       "BadRequest", "invalid YAML at line"},
      {"unknown kind", "POST", "/apis/agents.kruise.io/v1alpha1/namespaces/default/widgets",
       R"({"kind": "Widget"})", "application/json", 404, "NotFound", "no resource \"widgets\""},
      {"unknown group", "GET", "/apis/example.com/v1/namespaces/default/things", "", "", 404,
       "NotFound", "could not find the requested resource"},
      {"invalid object", "POST", kSets, api::DumpJson(invalid), "application/json", 422, "Invalid",
       "SandboxSet.agents.kruise.io \"bad\" is invalid: spec.replicas: Invalid value: -1: must be "
       ">= 0"},
      {"wrong field type", "POST", kSets,
       R"({"apiVersion":"agents.kruise.io/v1alpha1","kind":"SandboxSet","metadata":{"name":"t"},"spec":{"replicas":"three"}})",
       "application/json", 422, "Invalid", "spec.replicas: must be an integer, got string"},
      {"already exists", "POST", kSets, api::DumpJson(PoolJson("dup", 1)), "application/json", 409,
       "AlreadyExists", "sandboxsets.agents.kruise.io \"dup\" already exists"},
      {"stale patch", "PATCH", std::string(kSets) + "/dup",
       R"({"metadata":{"resourceVersion":")" + old_rv + R"("},"spec":{"replicas":3}})",
       "application/merge-patch+json", 409, "Conflict", "stale resourceVersion " + old_rv},
      {"oversized body", "POST", kSets, big, "application/json", 413, "RequestEntityTooLarge",
       "the limit is 3145728"},
      {"missing object", "GET", std::string(kSets) + "/nope", "", "", 404, "NotFound",
       "sandboxsets.agents.kruise.io \"nope\" not found"},
      {"json-patch", "PATCH", std::string(kSets) + "/dup", R"([{"op":"remove","path":"/spec"}])",
       "application/json-patch+json", 415, "UnsupportedMediaType",
       "use application/merge-patch+json"},
      {"bad label selector", "GET", std::string(kSets) + "?labelSelector=a%20in%20(x", "", "", 400,
       "BadRequest", "unable to parse label selector"},
      {"bad continue", "GET", std::string(kSets) + "?limit=1&continue=garbage", "", "", 400,
       "BadRequest", "invalid continue token"},
      {"namespace mismatch", "POST", kSets, api::DumpJson(wrong_ns), "application/json", 400,
       "BadRequest", "does not match the namespace sent on the request"},
      {"watch from the future", "GET", std::string(kSets) + "?watch=1&resourceVersion=999999", "",
       "", 400, "BadRequest", "newer than the store's current revision"},
      {"no scale subresource", "GET", std::string(kSandboxes) + "/x/scale", "", "", 404, "NotFound",
       "has no scale subresource"},
      {"cluster-scoped kind in a namespace", "GET",
       "/apis/warren.dev/v1alpha1/namespaces/default/nodes", "", "", 404, "NotFound",
       "cluster-scoped"},
      {"empty body", "POST", kSets, "", "application/json", 400, "BadRequest",
       "the request body is empty"},
      {"unsupported propagation", "DELETE",
       std::string(kSets) + "/dup?propagationPolicy=Foreground", "", "", 400, "BadRequest",
       "not supported: use Background or Orphan"},
  };
  for (const auto& c : cases) {
    Reply r = Call(s, c.method, c.target, c.body, c.content_type);
    EXPECT_EQ(r.code, c.code) << c.what << ": " << r.raw.substr(0, 300);
    EXPECT_EQ(r.body.value("kind", ""), "Status") << c.what;
    EXPECT_EQ(r.body.value("reason", ""), c.reason) << c.what << ": " << r.raw.substr(0, 300);
    EXPECT_NE(r.body.value("message", "").find(c.message), std::string::npos)
        << c.what << ": " << r.raw.substr(0, 300);
  }
  // Nothing bad was stored and the server still answers.
  EXPECT_EQ(Call(s, "GET", kSets).body["items"].size(), 1u);
}

TEST(ServerHttp, ListsPageConsistently) {
  ServerProcess s;
  for (int i = 0; i < 5; ++i) {
    ASSERT_EQ(Call(s, "POST", kSets, api::DumpJson(PoolJson(fmt::format("p{}", i), i))).code, 201);
  }
  std::vector<std::string> names;
  std::string token;
  int pages = 0;
  do {
    std::string target = std::string(kSets) + "?limit=2";
    if (!token.empty()) target += "&continue=" + token;
    Reply page = Call(s, "GET", target);
    ASSERT_EQ(page.code, 200) << page.raw;
    for (const auto& item : page.body["items"]) names.push_back(item["metadata"]["name"]);
    token = page.body["metadata"].value("continue", "");
    if (pages == 0) {
      // A write between pages does not show in the next ones.
      ASSERT_EQ(Call(s, "POST", kSets, api::DumpJson(PoolJson("p9", 1))).code, 201);
    }
    ++pages;
  } while (!token.empty() && pages < 10);
  EXPECT_EQ(pages, 3);
  EXPECT_EQ(names, (std::vector<std::string>{"p0", "p1", "p2", "p3", "p4"}));

  Reply filtered = Call(s, "GET", std::string(kSets) + "?fieldSelector=spec.replicas%3D3");
  ASSERT_EQ(filtered.body["items"].size(), 1u);
  EXPECT_EQ(filtered.body["items"][0]["metadata"]["name"], "p3");
}

// A watch streams one JSON event per line, in order, and resumes from a revision.
TEST(ServerHttp, WatchStreamsEventsAndResumes) {
  ServerProcess s;
  std::string start_rv =
      Call(s, "GET", kSets).body["metadata"]["resourceVersion"].get<std::string>();
  std::mutex mu;
  std::vector<Json> events;
  auto watch_client = net::HttpClient::ForAddress(s.address());
  ASSERT_TRUE(watch_client.ok());
  (*watch_client)->SetDefaultHeader("Authorization", "Bearer " + s.admin_key());
  // The pool controller writes the set's status; those MODIFIED events (same generation) are
  // not what this test is about.
  auto status_only = [](const Json& e, int64_t& generation) {
    int64_t g = e["object"]["metadata"].value("generation", 0);
    bool skip = e["type"] == "MODIFIED" && g == generation;
    generation = g;
    return skip;
  };
  std::thread watcher([&] {
    net::ClientRequest req;
    req.target = std::string(kSets) + "?watch=1&resourceVersion=" + start_rv;
    std::string buffer;
    int64_t generation = 0;
    auto r = (*watch_client)->DoStreaming(req, nullptr, [&](std::string_view data) {
      buffer.append(data);
      size_t nl;
      std::lock_guard lock(mu);
      while ((nl = buffer.find('\n')) != std::string::npos) {
        Json e = Json::parse(buffer.substr(0, nl));
        if (!status_only(e, generation)) events.push_back(std::move(e));
        buffer.erase(0, nl + 1);
      }
      return events.size() < 3;
    });
    EXPECT_TRUE(r.ok()) << r.status();
  });
  Reply c = Call(s, "POST", kSets, api::DumpJson(PoolJson("w", 1)));
  ASSERT_EQ(c.code, 201);
  std::string created_rv = c.body["metadata"]["resourceVersion"];
  ASSERT_EQ(Call(s, "PATCH", std::string(kSets) + "/w", R"({"spec":{"replicas":2}})",
                 "application/merge-patch+json")
                .code,
            200);
  ASSERT_EQ(Call(s, "DELETE", std::string(kSets) + "/w").code, 200);
  watcher.join();
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["type"], "ADDED");
  EXPECT_EQ(events[1]["type"], "MODIFIED");
  EXPECT_EQ(events[1]["object"]["spec"]["replicas"], 2);
  EXPECT_EQ(events[2]["type"], "DELETED");

  // Resume after the create: the modification and the deletion, then it stays open.
  net::ClientRequest resume;
  resume.target = std::string(kSets) + "?watch=1&resourceVersion=" + created_rv;
  std::vector<std::string> types;
  std::string buffer;
  int64_t generation = 1;
  auto resumed = (*watch_client)->DoStreaming(resume, nullptr, [&](std::string_view data) {
    buffer.append(data);
    size_t nl;
    while ((nl = buffer.find('\n')) != std::string::npos) {
      Json e = Json::parse(buffer.substr(0, nl));
      if (!status_only(e, generation)) types.push_back(e["type"]);
      buffer.erase(0, nl + 1);
    }
    return types.size() < 2;
  });
  EXPECT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(types, (std::vector<std::string>{"MODIFIED", "DELETED"}));
}

TEST(ServerHttp, ObjectsSurviveARestart) {
  store::testing::TempDir dir;
  {
    ServerProcess s(dir.path());
    ASSERT_EQ(Call(s, "POST", kSets, api::DumpJson(PoolJson("kept", 4))).code, 201);
  }
  ServerProcess again(dir.path());
  Reply got = Call(again, "GET", std::string(kSets) + "/kept");
  ASSERT_EQ(got.code, 200) << got.raw;
  EXPECT_EQ(got.body["spec"]["replicas"], 4);
}

}  // namespace
}  // namespace warren::testing
