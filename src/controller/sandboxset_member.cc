#include "controller/sandboxset_member.h"

#include <algorithm>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/ids.h"

namespace warren::controller {

std::string_view MemberStateName(MemberState state) {
  switch (state) {
    case MemberState::kCreating:
      return "creating";
    case MemberState::kAvailable:
      return "available";
    case MemberState::kHibernated:
      return "hibernated";
    case MemberState::kUsed:
      return "used";
    case MemberState::kDead:
      return "dead";
    case MemberState::kTerminating:
      return "terminating";
  }
  return "unknown";
}

namespace {

std::string_view Phase(const api::Object& sandbox) {
  const api::Json& status = sandbox.status();
  if (!status.is_object()) return {};
  auto it = status.find("phase");
  if (it == status.end() || !it->is_string()) return {};
  return it->get_ref<const std::string&>();
}

bool ReadyConditionTrue(const api::Object& sandbox) {
  const api::Json& status = sandbox.status();
  if (!status.is_object()) return false;
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return false;
  for (const auto& c : *it) {
    if (!c.is_object()) continue;
    auto type = c.find("type");
    if (type == c.end() || !type->is_string() || *type != "Ready") continue;
    auto st = c.find("status");
    return st != c.end() && st->is_string() && *st == "True";
  }
  return false;
}

bool SpecPaused(const api::Object& sandbox) {
  const api::Json& spec = sandbox.spec();
  if (!spec.is_object()) return false;
  auto it = spec.find("paused");
  return it != spec.end() && it->is_boolean() && it->get<bool>();
}

bool HasLabel(const api::Object& o, const char* key, std::string_view value) {
  auto it = o.metadata.labels.find(key);
  return it != o.metadata.labels.end() && it->second == value;
}

}  // namespace

bool IsRunningAndReady(const api::Object& sandbox) {
  return Phase(sandbox) == api::sandbox_phase::kRunning && ReadyConditionTrue(sandbox);
}

MemberState ClassifyMember(const api::Object& sandbox) {
  if (sandbox.metadata.deletion_timestamp) return MemberState::kTerminating;
  if (HasLabel(sandbox, api::labels::kSandboxClaimed, "true")) return MemberState::kUsed;
  std::string_view phase = Phase(sandbox);
  if (phase == api::sandbox_phase::kFailed || phase == api::sandbox_phase::kSucceeded) {
    return MemberState::kDead;
  }
  const bool locked = sandbox.metadata.annotations.contains(api::annotations::kLock) ||
                      sandbox.metadata.annotations.contains(pool_annotations::kRecycling);
  if (SpecPaused(sandbox)) {
    // Still running while its pause is under way: neither claimable nor gone (no refill).
    if (!locked && phase == api::sandbox_phase::kPaused && !ReadyConditionTrue(sandbox)) {
      return MemberState::kHibernated;
    }
    return MemberState::kCreating;
  }
  if (!locked && IsRunningAndReady(sandbox)) return MemberState::kAvailable;
  return MemberState::kCreating;
}

bool IsClaimable(const api::Object& sandbox) {
  return SetOwnerUid(sandbox) != nullptr && ClassifyMember(sandbox) == MemberState::kAvailable;
}

bool IsStock(MemberState state) {
  return state == MemberState::kAvailable || state == MemberState::kHibernated;
}

int64_t IdlePauseSeconds(const api::Object& sandbox) {
  const api::Json& spec = sandbox.spec();
  if (!spec.is_object()) return 0;
  auto strategy = spec.find("pauseStrategy");
  if (strategy == spec.end() || !strategy->is_object()) return 0;
  auto idle = strategy->find("idleSeconds");
  if (idle == strategy->end() || !idle->is_number_integer()) return 0;
  return std::max<int64_t>(0, idle->get<int64_t>());
}

const std::string* SetOwnerUid(const api::Object& sandbox) {
  const api::OwnerReference* ref = sandbox.ControllerRef();
  if (ref == nullptr || ref->kind != "SandboxSet") return nullptr;
  return &ref->uid;
}

std::string_view PoolOf(const api::Object& sandbox) {
  auto it = sandbox.metadata.labels.find(api::labels::kSandboxPool);
  return it == sandbox.metadata.labels.end() ? std::string_view() : std::string_view(it->second);
}

api::Object MakeMember(const api::Object& set, const TemplateRevision& revision) {
  api::Object o;
  o.api_version = api::kAgentsApiVersion;
  o.kind = "Sandbox";
  o.metadata.namespace_ = set.metadata.namespace_;
  // Sandbox names become hostnames elsewhere; keep room for the 5-character suffix.
  o.metadata.generate_name = set.metadata.name.substr(0, 57) + "-";
  std::string id = base::NewSandboxId();
  o.metadata.labels[api::labels::kSandboxPool] = set.metadata.name;
  o.metadata.labels[api::labels::kTemplateHash] = revision.hash;
  o.metadata.labels[api::labels::kSandboxClaimed] = "false";
  o.metadata.labels[api::labels::kSandboxId] = id;
  o.metadata.annotations[api::annotations::kSandboxId] = id;
  auto cleanup = set.metadata.annotations.find(api::annotations::kCleanupEnabled);
  if (cleanup != set.metadata.annotations.end()) {
    o.metadata.annotations[api::annotations::kCleanupEnabled] = cleanup->second;
  }
  o.metadata.owner_references.push_back(set.MakeControllerRef());
  // The node reads the snapshot to start from on the Sandbox itself (node/image_step.h).
  if (!revision.restore_from.empty()) {
    o.metadata.annotations[api::annotations::kRestoreFrom] = revision.restore_from;
  }
  api::Json& spec = o.spec();
  spec["templateRef"] = {{"apiVersion", api::kAgentsApiVersion},
                         {"kind", "SandboxTemplate"},
                         {"name", revision.template_name}};
  for (const char* field :
       {"persistentContents", "runtimes", "pauseStrategy", "volumeClaimTemplates"}) {
    if (revision.template_spec.contains(field)) spec[field] = revision.template_spec[field];
  }
  return o;
}

bool OlderFirst(const api::Object& a, const api::Object& b) {
  auto ta = a.metadata.creation_timestamp.value_or(base::WallTime{});
  auto tb = b.metadata.creation_timestamp.value_or(base::WallTime{});
  if (ta != tb) return ta < tb;
  return a.metadata.name < b.metadata.name;
}

}  // namespace warren::controller
