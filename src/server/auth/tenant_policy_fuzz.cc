// libFuzzer target for what a team key may write: the input is a merge patch (JSON) a tenant
// sends for its own Sandbox or SandboxTemplate. Whatever the policy lets through must leave the
// control plane's keys as they were and bring no hostPath volume the stored object did not
// have — checked here by an oracle written apart from the policy's own key lists. A crash, a
// sanitizer report or a broken invariant (trap) is a bug.

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "server/auth/tenant_policy.h"

using namespace warren;

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// What only the control plane may set on a Sandbox, listed independently of tenant_policy.cc:
// the annotations it reads and the labels it selects by. A label's name used as an annotation
// (or the other way round) means nothing to it, so a team may set it.
bool ControlPlaneAnnotation(std::string_view key) {
  static const std::set<std::string, std::less<>> kKeys = {
      "agents.kruise.io/lock",
      "agents.kruise.io/owner",
      "agents.kruise.io/claim-timestamp",
      "agents.kruise.io/init-runtime-request",
      "agents.kruise.io/runtime-access-token",
      "agents.kruise.io/runtime-url",
      "agents.kruise.io/sandbox-id",
      "agents.kruise.io/updated-metadata-in-claim",
  };
  return kKeys.contains(key) || key.starts_with("secrets.warren.dev/");
}

bool ControlPlaneLabel(std::string_view key) {
  static const std::set<std::string, std::less<>> kKeys = {
      "agents.kruise.io/sandbox-id",      "agents.kruise.io/sandbox-pool",
      "agents.kruise.io/sandbox-claimed", "agents.kruise.io/claim-name",
      "agents.kruise.io/template-hash",
  };
  return kKeys.contains(key);
}

void CheckKeysKept(const std::map<std::string, std::string>& before,
                   const std::map<std::string, std::string>& after,
                   bool (*control_plane)(std::string_view)) {
  for (const auto& [k, v] : after) {
    if (!control_plane(k)) continue;
    auto it = before.find(k);
    Check(it != before.end() && it->second == v);  // neither added nor changed
  }
  for (const auto& [k, v] : before) {
    if (control_plane(k)) Check(after.contains(k));  // nor removed
  }
}

std::set<std::string> HostPaths(const api::Json& spec) {
  std::set<std::string> out;
  const api::Json* volumes = nullptr;
  if (spec.is_object() && spec.contains("template") && spec["template"].is_object() &&
      spec["template"].contains("spec") && spec["template"]["spec"].is_object() &&
      spec["template"]["spec"].contains("volumes")) {
    volumes = &spec["template"]["spec"]["volumes"];
  }
  if (volumes == nullptr || !volumes->is_array()) return out;
  for (const api::Json& v : *volumes) {
    if (v.is_object() && v.contains("hostPath")) out.insert(api::DumpJson(v));
  }
  return out;
}

const api::Object& Stored(std::string_view kind) {
  // An admin gave both a hostPath volume; the control plane has claimed the Sandbox.
  static const std::string kSpec = R"("spec":{"template":{"spec":{
      "containers":[{"name":"main","image":"base"}],
      "volumes":[{"name":"data","hostPath":{"path":"/srv/data"}},{"name":"tmp","emptyDir":{}}]}}})";
  static const api::Object sandbox = *api::ObjectFromJsonText(
      R"({"apiVersion":"agents.kruise.io/v1alpha1","kind":"Sandbox",
          "metadata":{"name":"mine","namespace":"team-a","resourceVersion":"7",
            "labels":{"agents.kruise.io/sandbox-id":"abc","app":"x",
                      "agents.kruise.io/sandbox-claimed":"true"},
            "annotations":{"agents.kruise.io/owner":"key-1","note":"n",
                           "secrets.warren.dev/access-token":"v1.sealed"}},)" +
      kSpec + "}");
  static const api::Object tpl = *api::ObjectFromJsonText(
      R"({"apiVersion":"agents.kruise.io/v1alpha1","kind":"SandboxTemplate",
          "metadata":{"name":"tpl","namespace":"team-a","resourceVersion":"3"},)" +
      kSpec + "}");
  return kind == "Sandbox" ? sandbox : tpl;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto patch = api::ParseJson(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!patch.ok()) return 0;
  const base::Principal team{.key_id = "0123456789abcdef", .key_name = "a", .team = "team-a"};
  for (const char* kind_name : {"Sandbox", "SandboxTemplate"}) {
    const api::Object& current = Stored(kind_name);
    const api::KindInfo* kind = api::BuiltinKinds().ForObject(current.api_version, current.kind);
    Check(kind != nullptr);
    auto result = server::auth::TenantPatchResult(team, *kind, current, *patch);
    if (!result.ok()) continue;
    Check(result->metadata.namespace_ == "team-a");
    std::set<std::string> had = HostPaths(current.spec());
    for (const std::string& v : HostPaths(result->spec())) Check(had.contains(v));
    if (current.kind == "Sandbox") {
      CheckKeysKept(current.metadata.annotations, result->metadata.annotations,
                    ControlPlaneAnnotation);
      CheckKeysKept(current.metadata.labels, result->metadata.labels, ControlPlaneLabel);
    }
  }
  return 0;
}
