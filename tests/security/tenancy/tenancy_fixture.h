#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "api/json.h"
#include "net/http_client.h"
#include "process.h"
#include "store/testing/temp_store.h"

namespace warren::testing {

struct Reply {
  int status = 0;
  std::string text;
  api::Json json;
  net::Headers headers;
};

// A real `warren server` (no node agent) with three keys: the admin's (made by `warren apikey
// bootstrap`), and one each for teams "team-a" and "team-b" (made by the admin through
// /api-keys). Each request says which key it presents; none is sent by default.
class TenancyTest : public ::testing::Test {
 protected:
  void SetUp() override { Boot({}); }

  // (Re)starts the server with `extra_args` and makes the team keys.
  void Boot(std::vector<std::string> extra_args) {
    // The data directory is the test's, so it outlives a server the test crashes.
    server_ = std::make_unique<ServerProcess>(dir_.path(), std::move(extra_args));
    admin_key_ = server_->admin_key();
    auto client = net::HttpClient::ForAddress(server_->address());
    ASSERT_TRUE(client.ok());
    http_ = std::move(*client);
    team_a_key_ = MakeKey("team-a");
    team_b_key_ = MakeKey("team-b");
  }

  // kill -9 of the server, and a new one on the same data directory (keys and objects kept).
  void CrashAndRestart(std::vector<std::string> extra_args) {
    server_->Kill();
    server_ = std::make_unique<ServerProcess>(dir_.path(), std::move(extra_args));
    auto client = net::HttpClient::ForAddress(server_->address());
    ASSERT_TRUE(client.ok());
    http_ = std::move(*client);
  }

  std::string MakeKey(const std::string& team) {
    Reply r = Call("POST", "/api-keys", admin_key_, api::Json{{"team", team}}.dump());
    EXPECT_EQ(r.status, 201) << r.text;
    return r.json.value("key", "");
  }

  // `key` is sent as Authorization: Bearer (resource API) and X-API-Key (E2B); "" sends none.
  Reply Call(const std::string& method, const std::string& target, const std::string& key,
             const std::string& body = "",
             const std::string& patch_type = "application/merge-patch+json") {
    net::ClientRequest req;
    req.method = method;
    req.target = target;
    if (!key.empty()) {
      req.headers.Set("Authorization", "Bearer " + key);
      req.headers.Set("X-API-Key", key);
    }
    if (!body.empty()) {
      req.headers.Set("Content-Type", method == "PATCH" ? patch_type : "application/json");
      req.body = body;
    }
    req.timeout = std::chrono::seconds(30);
    auto resp = http_->Do(req);
    EXPECT_TRUE(resp.ok()) << method << " " << target << ": " << resp.status();
    Reply r;
    if (!resp.ok()) return r;
    r.status = resp->status;
    r.text = resp->body;
    r.headers = resp->headers;
    if (auto doc = api::ParseJson(resp->body); doc.ok()) r.json = std::move(*doc);
    return r;
  }

  static std::vector<api::Json> Items(const Reply& r) {
    std::vector<api::Json> out;
    if (r.json.is_object() && r.json.contains("items")) {
      for (const auto& i : r.json["items"]) out.push_back(i);
    }
    return out;
  }

  static api::Json PodTemplate() {
    return {{"spec", {{"containers", {{{"name", "main"}, {"image", "base"}}}}}}};
  }

  void CreateSandbox(const std::string& key, const std::string& ns, const std::string& name) {
    api::Json o = {{"apiVersion", "agents.kruise.io/v1alpha1"},
                   {"kind", "Sandbox"},
                   {"metadata", {{"name", name}}},
                   {"spec", {{"template", PodTemplate()}}}};
    Reply r = Call("POST", "/apis/agents.kruise.io/v1alpha1/namespaces/" + ns + "/sandboxes", key,
                   o.dump());
    EXPECT_EQ(r.status, 201) << r.text;
  }

  // A Sandbox "box", SandboxTemplate "tpl", SandboxSet "pool" (no replicas), Checkpoint "cp"
  // (of box; no node captures it here) and SandboxClaim "claim" in `ns`, made with `key`.
  void MakeTeamObjects(const std::string& key, const std::string& ns) {
    const std::string base = "/apis/agents.kruise.io/v1alpha1/namespaces/" + ns;
    CreateSandbox(key, ns, "box");
    std::vector<std::pair<std::string, api::Json>> objects = {
        {"sandboxtemplates",
         {{"apiVersion", "agents.kruise.io/v1alpha1"},
          {"kind", "SandboxTemplate"},
          {"metadata", {{"name", "tpl"}}},
          {"spec", {{"template", PodTemplate()}}}}},
        {"sandboxsets",
         {{"apiVersion", "agents.kruise.io/v1alpha1"},
          {"kind", "SandboxSet"},
          {"metadata", {{"name", "pool"}}},
          {"spec", {{"replicas", 0}, {"template", PodTemplate()}}}}},
        {"checkpoints",
         {{"apiVersion", "agents.kruise.io/v1alpha1"},
          {"kind", "Checkpoint"},
          {"metadata", {{"name", "cp"}}},
          {"spec", {{"sandboxName", "box"}}}}},
        {"sandboxclaims",
         {{"apiVersion", "agents.kruise.io/v1alpha1"},
          {"kind", "SandboxClaim"},
          {"metadata", {{"name", "claim"}}},
          {"spec", {{"templateName", "pool"}, {"replicas", 1}, {"createOnNoStock", false}}}}},
        {"trafficpolicies", api::Json::parse(R"({
          "apiVersion": "agents.kruise.io/v1alpha1", "kind": "TrafficPolicy",
          "metadata": {"name": "tp"},
          "spec": {"selector": {"matchLabels": {"selects": "nothing"}},
                   "egress": {"rules": [{"action": "reject", "to": [{"cidr": "0.0.0.0/0"}]}]}}})")},
        {"poolautoscalers", api::Json::parse(R"({
          "apiVersion": "agents.kruise.io/v1alpha1", "kind": "PoolAutoscaler",
          "metadata": {"name": "pas"},
          "spec": {"scaleTargetRef": {"kind": "SandboxSet", "name": "pool"}, "maxReplicas": 1}})")},
    };
    for (const auto& [plural, o] : objects) {
      Reply r = Call("POST", base + "/" + plural, key, o.dump());
      EXPECT_EQ(r.status, 201) << plural << ": " << r.text;
    }
  }

  // The E2B id of a Sandbox (read with the admin key).
  std::string SandboxIdOf(const std::string& ns, const std::string& name) {
    Reply r = Call("GET", "/apis/agents.kruise.io/v1alpha1/namespaces/" + ns + "/sandboxes/" + name,
                   admin_key_);
    return r.json["metadata"]["labels"].value("agents.kruise.io/sandbox-id", "");
  }

  store::testing::TempDir dir_;
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<net::HttpClient> http_;
  std::string admin_key_, team_a_key_, team_b_key_;
};

}  // namespace warren::testing
