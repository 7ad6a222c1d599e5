#include "server/auth/tenant_policy.h"

#include <fmt/format.h>

#include <set>
#include <string>

#include "api/merge_patch.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "api/types/lease.h"

namespace warren::server::auth {
namespace {

namespace labels = api::labels;
namespace annotations = api::annotations;

// Keys on a Sandbox only the control plane writes: who owns it, the claim, its id, its secrets.
const std::set<std::string, std::less<>>& ControlPlaneAnnotations() {
  static const std::set<std::string, std::less<>> kKeys = {
      annotations::kLock,
      annotations::kOwner,
      annotations::kClaimTimestamp,
      annotations::kInitRuntimeRequest,
      annotations::kRuntimeAccessToken,
      annotations::kRuntimeUrl,
      annotations::kSandboxId,
      annotations::kUpdatedMetadataInClaim,
      "warren.dev/claim-pending",  // controller/sandboxset_member.h (a module above this one)
      "warren.dev/recycling",
  };
  return kKeys;
}

const std::set<std::string, std::less<>>& ControlPlaneLabels() {
  static const std::set<std::string, std::less<>> kKeys = {
      labels::kSandboxId, labels::kSandboxPool, labels::kSandboxClaimed, labels::kClaimName,
      labels::kTemplateHash};
  return kKeys;
}

bool IsControlPlaneAnnotation(std::string_view key) {
  return ControlPlaneAnnotations().contains(key) || key.starts_with(annotations::kSecretPrefix);
}

bool IsKind(const api::KindInfo& kind, std::string_view group, std::string_view name) {
  return kind.group == group && kind.kind == name;
}

// Kinds whose objects only the control plane (or an admin) writes.
bool IsSystemWritten(const api::KindInfo& kind) {
  return IsKind(kind, api::kWarrenGroup, "Event") || IsKind(kind, api::kWarrenGroup, "Node") ||
         IsKind(kind, api::kWarrenGroup, "ResourceQuota");
}

// Kinds only the control plane reads and writes: the replicas' Leases (who leads, who is alive)
// are not a team's business in any namespace, its own included.
bool IsControlPlaneOnly(const api::KindInfo& kind) {
  return IsKind(kind, api::kCoordinationGroup, "Lease");
}

bool HasPodTemplate(const api::KindInfo& kind) {
  return kind.group == api::kAgentsGroup &&
         (kind.kind == "Sandbox" || kind.kind == "SandboxSet" || kind.kind == "SandboxTemplate");
}

// "name=path" of every hostPath volume of the object's pod template.
std::set<std::string> HostPathVolumes(const api::Json& spec) {
  std::set<std::string> out;
  if (!spec.is_object()) return out;
  auto tpl = spec.find("template");
  if (tpl == spec.end() || !tpl->is_object()) return out;
  auto pod = tpl->find("spec");
  if (pod == tpl->end() || !pod->is_object()) return out;
  auto volumes = pod->find("volumes");
  if (volumes == pod->end() || !volumes->is_array()) return out;
  for (const api::Json& v : *volumes) {
    if (!v.is_object() || !v.contains("hostPath")) continue;
    out.insert(api::DumpJson(v));
  }
  return out;
}

Status NoHostPath(const base::Principal& who, const api::Json& spec, const api::Json* old_spec,
                  std::string_view path = "spec.template.spec.volumes") {
  std::set<std::string> added = HostPathVolumes(spec);
  if (old_spec != nullptr) {
    for (const std::string& v : HostPathVolumes(*old_spec)) added.erase(v);
  }
  if (added.empty()) return Status::Ok();
  return PermissionDeniedError(
      fmt::format("{}: a hostPath volume puts the host's files inside the sandbox; "
                  "only an admin key may add one (key {} belongs to team \"{}\")",
                  path, who.key_name, who.team));
}

// A SandboxUpdateOps' spec.patch is a pod template the controller (an admin) writes into the
// team's sandboxes, so a hostPath volume in it is checked as one in a template would be.
Status NoHostPathInUpdateOps(const base::Principal& who, const api::KindInfo& kind,
                             const api::Json& spec) {
  if (!IsKind(kind, api::kAgentsGroup, "SandboxUpdateOps") || !spec.is_object()) {
    return Status::Ok();
  }
  auto patch = spec.find("patch");
  if (patch == spec.end()) return Status::Ok();
  return NoHostPath(who, api::Json{{"template", *patch}}, nullptr, "spec.patch.spec.volumes");
}

std::string_view Get(const std::map<std::string, std::string>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? std::string_view() : std::string_view(it->second);
}

bool Same(const std::map<std::string, std::string>* old,
          const std::map<std::string, std::string>& now, const std::string& key) {
  bool had = old != nullptr && old->contains(key);
  if (had != now.contains(key)) return false;
  return !had || Get(*old, key) == Get(now, key);
}

Status ProtectedKeysUnchanged(const api::Object* old, const api::Object& object) {
  const api::ObjectMeta* before = old != nullptr ? &old->metadata : nullptr;
  std::set<std::string> keys;
  for (const auto& [k, v] : object.metadata.annotations) {
    if (IsControlPlaneAnnotation(k)) keys.insert(k);
  }
  if (before != nullptr) {
    for (const auto& [k, v] : before->annotations) {
      if (IsControlPlaneAnnotation(k)) keys.insert(k);
    }
  }
  for (const std::string& k : keys) {
    if (!Same(before ? &before->annotations : nullptr, object.metadata.annotations, k)) {
      return PermissionDeniedError(fmt::format(
          "metadata.annotations[{}] is set by the control plane and cannot be set or changed "
          "through the API",
          k));
    }
  }
  for (const std::string& k : ControlPlaneLabels()) {
    if (!Same(before ? &before->labels : nullptr, object.metadata.labels, k)) {
      return PermissionDeniedError(fmt::format(
          "metadata.labels[{}] is set by the control plane and cannot be set or changed "
          "through the API",
          k));
    }
  }
  return Status::Ok();
}

}  // namespace

Status CheckTenantScope(const base::Principal& who, const api::KindInfo& kind, std::string_view ns,
                        std::string_view name, Verb verb) {
  if (who.admin) return Status::Ok();
  if (!kind.namespaced) {
    return PermissionDeniedError(fmt::format(
        "{} are cluster-scoped: only an admin key may read or change them (key {} belongs to "
        "team \"{}\")",
        kind.Resource(), who.key_name, who.team));
  }
  if (IsControlPlaneOnly(kind)) {
    return PermissionDeniedError(fmt::format(
        "{} belong to the control plane: only an admin key may read or change them (key {} "
        "belongs to team \"{}\")",
        kind.Resource(), who.key_name, who.team));
  }
  if (!ns.empty() && ns != who.team) {
    // Worded as the store words a missing object (or namespace): nothing to tell apart.
    if (!name.empty())
      return NotFoundError(fmt::format("{} \"{}\" not found", kind.Resource(), name));
    return NotFoundError(fmt::format("namespaces \"{}\" not found", ns));
  }
  if (verb == Verb::kWrite && IsSystemWritten(kind)) {
    return PermissionDeniedError(fmt::format(
        "{} are written by the control plane: only an admin key may change them (key {} belongs "
        "to team \"{}\")",
        kind.Resource(), who.key_name, who.team));
  }
  return Status::Ok();
}

Status CheckTenantWrite(const base::Principal& who, const api::KindInfo& kind,
                        const api::Object* old, const api::Object& object, bool status) {
  if (who.admin) return Status::Ok();
  RETURN_IF_ERROR(
      CheckTenantScope(who, kind, object.metadata.namespace_, object.metadata.name, Verb::kWrite));
  // "" means every namespace to a read; an object written is in exactly one, the team's.
  if (kind.namespaced && object.metadata.namespace_ != who.team) {
    return NotFoundError(fmt::format("namespaces \"{}\" not found", object.metadata.namespace_));
  }
  if (status) {
    return PermissionDeniedError(fmt::format(
        "{}/status is written by the node agent and the controllers: only an admin key may "
        "change it",
        kind.Resource()));
  }
  if (HasPodTemplate(kind)) {
    RETURN_IF_ERROR(NoHostPath(who, object.spec(), old != nullptr ? &old->spec() : nullptr));
  }
  RETURN_IF_ERROR(NoHostPathInUpdateOps(who, kind, object.spec()));
  if (IsKind(kind, api::kAgentsGroup, "Sandbox"))
    RETURN_IF_ERROR(ProtectedKeysUnchanged(old, object));
  return Status::Ok();
}

Status CheckTenantPatch(const base::Principal& who, const api::KindInfo& kind,
                        const api::Json& patch, bool status) {
  if (who.admin) return Status::Ok();
  if (IsControlPlaneOnly(kind)) {
    return CheckTenantScope(who, kind, who.team, "", Verb::kWrite);
  }
  if (status) {
    return PermissionDeniedError(fmt::format(
        "{}/status is written by the node agent and the controllers: only an admin key may "
        "change it",
        kind.Resource()));
  }
  if (!patch.is_object()) return Status::Ok();
  if (HasPodTemplate(kind) && patch.contains("spec")) {
    RETURN_IF_ERROR(NoHostPath(who, patch["spec"], nullptr));
  }
  if (patch.contains("spec")) RETURN_IF_ERROR(NoHostPathInUpdateOps(who, kind, patch["spec"]));
  if (!IsKind(kind, api::kAgentsGroup, "Sandbox")) return Status::Ok();
  auto meta = patch.find("metadata");
  if (meta == patch.end() || !meta->is_object()) return Status::Ok();
  for (const char* field : {"annotations", "labels"}) {
    auto map = meta->find(field);
    if (map == meta->end() || !map->is_object()) continue;
    for (const auto& [k, v] : map->items()) {
      bool is_protected = std::string_view(field) == "labels" ? ControlPlaneLabels().contains(k)
                                                              : IsControlPlaneAnnotation(k);
      if (is_protected) {
        return PermissionDeniedError(fmt::format(
            "metadata.{}[{}] is set by the control plane and cannot be set or changed through "
            "the API",
            field, k));
      }
    }
  }
  return Status::Ok();
}

Result<api::Object> TenantPatchResult(const base::Principal& who, const api::KindInfo& kind,
                                      const api::Object& current, const api::Json& patch) {
  RETURN_IF_ERROR(CheckTenantPatch(who, kind, patch, /*status=*/false));
  if (!patch.is_object()) {
    return InvalidArgumentError(
        fmt::format("a merge patch must be a JSON object, got {}", api::JsonTypeName(patch)));
  }
  api::Json doc = api::ObjectToJson(current);
  api::ApplyMergePatch(doc, patch);
  ASSIGN_OR_RETURN(api::Object result, api::ObjectFromJson(std::move(doc)));
  if (result.metadata.name != current.metadata.name ||
      result.metadata.namespace_ != current.metadata.namespace_) {
    return InvalidArgumentError(fmt::format(
        "{} \"{}\" is invalid: metadata.name: Invalid value: a patch may not change the name or "
        "namespace",
        kind.GroupKind(), current.metadata.name));
  }
  RETURN_IF_ERROR(CheckTenantWrite(who, kind, &current, result, /*status=*/false));
  return result;
}

}  // namespace warren::server::auth
