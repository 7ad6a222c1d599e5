#include "e2b_client.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "base/check.h"
#include "base/strings.h"

namespace warren::pool_testing {

using namespace std::chrono_literals;

std::string BootstrapAdminKey(WarrenServer& server) {
  auto [code, out] = server.Cli({"apikey", "bootstrap", "--data-dir", server.data_dir(), "--config",
                                 server.data_dir() + "/cli-config"});
  CHECK_MSG(code == 0, "apikey bootstrap failed: " << out);
  std::ifstream f(server.data_dir() + "/admin-key");
  std::string key;
  f >> key;
  CHECK_MSG(!key.empty(), "no admin key in " << server.data_dir());
  return key;
}

Result<api::Json> E2bClient::Create(const std::string& template_id, bool create_on_no_stock,
                                    const api::Json& env_vars, const std::string& traceparent) {
  api::Json body = {{"templateID", template_id}, {"timeout", 600}, {"envVars", env_vars}};
  if (!create_on_no_stock) {
    body["metadata"] = {{"e2b.agents.kruise.io/create-on-no-stock", "false"}};
  }
  net::ClientRequest req{.method = "POST", .target = "/sandboxes"};
  req.headers.Set("X-API-Key", key_);
  req.headers.Set("Content-Type", "application/json");
  if (!traceparent.empty()) req.headers.Set("traceparent", traceparent);
  req.body = api::DumpJson(body);
  req.timeout = 120s;
  auto r = server_.http().Do(req);
  if (!r.ok()) return r.status();
  if (r->status != 201) {
    return UnavailableError(fmt::format("create answered {}: {}", r->status, r->body));
  }
  return api::ParseJson(r->body);
}

Status E2bClient::Kill(const std::string& sandbox_id) {
  net::ClientRequest req{.method = "DELETE", .target = "/sandboxes/" + sandbox_id};
  req.headers.Set("X-API-Key", key_);
  // A kill tears the sandbox down (processes, mounts, cgroups): slower than a request when many
  // run at once, as in bench/claim.
  req.timeout = 60s;
  auto r = server_.http().Do(req);
  if (!r.ok()) return r.status();
  if (r->status != 204) return UnavailableError(fmt::format("kill answered {}", r->status));
  return Status::Ok();
}

Result<std::vector<api::Json>> ListSandboxes(WarrenServer& server, const std::string& selector) {
  std::string target = "/apis/agents.kruise.io/v1alpha1/sandboxes";
  if (!selector.empty()) target += "?labelSelector=" + base::PercentEncode(selector);
  auto r = server.http().Do({.method = "GET", .target = target});
  if (!r.ok()) return r.status();
  if (r->status != 200) return UnavailableError(r->body);
  ASSIGN_OR_RETURN(auto doc, api::ParseJson(r->body));
  std::vector<api::Json> out;
  for (auto& item : doc["items"]) out.push_back(item);
  return out;
}

int SetStatusCount(WarrenServer& server, const std::string& set, const std::string& field) {
  auto r = server.http().Do(
      {.method = "GET",
       .target = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/" + set});
  if (!r.ok() || r->status != 200) return -1;
  auto doc = api::ParseJson(r->body);
  if (!doc.ok()) return -1;
  const api::Json& status = (*doc)["status"];
  return status.is_object() ? status.value(field, 0) : 0;
}

int AvailableReplicas(WarrenServer& server, const std::string& set) {
  return SetStatusCount(server, set, "availableReplicas");
}

std::string PoolManifest(const std::string& name, int replicas, const std::string& extra_spec) {
  return fmt::format(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata:
  name: {}
spec:
  replicas: {}
{}  template:
    spec:
      containers:
        - name: main
          image: base
)",
                     name, replicas, extra_spec);
}

}  // namespace warren::pool_testing
