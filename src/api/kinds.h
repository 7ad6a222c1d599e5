#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "base/status.h"

namespace warren::api {

// The groups Warren serves. OpenKruise Agents kinds keep their upstream group so their manifests
// apply unchanged; Warren's own kinds (Node, Event) live in warren.dev.
inline constexpr const char* kAgentsGroup = "agents.kruise.io";
inline constexpr const char* kWarrenGroup = "warren.dev";
inline constexpr const char* kAppsGroup = "apps.kruise.io";
inline constexpr const char* kAppsApiVersion = "apps.kruise.io/v1alpha1";
inline constexpr const char* kV1alpha1 = "v1alpha1";
inline constexpr const char* kAgentsApiVersion = "agents.kruise.io/v1alpha1";
inline constexpr const char* kWarrenApiVersion = "warren.dev/v1alpha1";

// A column of `warren get` for a kind, like a CRD's additionalPrinterColumns. NAME (and
// NAMESPACE with -A) come first and AGE last; these are the ones in between.
struct PrinterColumn {
  // kPercent: an integer 0–100 the CLI draws as a bar.
  enum class Type { kString, kInteger, kBoolean, kDate, kPercent };
  std::string name;       // "PHASE"
  std::string json_path;  // ".status.phase", or ".metadata.labels.agents\.kruise\.io/x"
  Type type = Type::kString;
  bool wide_only = false;  // shown only with -o wide
};

// Everything the REST server, the store and the CLI need to know about a kind. Immutable once
// registered; shared by const pointer for the life of the registry.
struct KindInfo {
  std::string group;
  std::string version;
  std::string kind;                      // "SandboxSet"
  std::string plural;                    // "sandboxsets"
  std::string singular;                  // "sandboxset"
  std::vector<std::string> short_names;  // "sbs"
  bool namespaced = true;
  // With a status subresource, updates of the main resource keep the stored status and
  // /status updates change only the status.
  bool status_subresource = false;
  // A scale subresource maps spec.replicas, status.replicas and status.selector.
  bool scale_subresource = false;
  std::vector<PrinterColumn> columns;

  // Admission, run by the store on every write (may be empty):
  // Defaults and validates the object's spec (or body); runs on create and update.
  std::function<Status(Object& object)> admit;
  // Rejects changes to immutable fields on update.
  std::function<Status(const Object& old_object, const Object& new_object)> admit_update;
  // Type-checks (and may default) the status on a status write.
  std::function<Status(Object& object)> admit_status;

  std::string ApiVersion() const;  // "agents.kruise.io/v1alpha1"
  std::string GroupKind() const;   // "SandboxSet.agents.kruise.io"
  std::string Resource() const;    // "sandboxsets.agents.kruise.io"
};

// The set of kinds one process serves. Built once at startup (Add is not thread-safe), then
// read-only and safe to share across threads. Lookups return nullptr when nothing matches.
class KindRegistry {
 public:
  KindRegistry() = default;
  KindRegistry(const KindRegistry&) = delete;
  KindRegistry& operator=(const KindRegistry&) = delete;

  // Registers a kind. A second kind with the same group and kind, plural or short name is a
  // programming error (CHECK).
  const KindInfo& Add(KindInfo info);

  // By an object's apiVersion and kind.
  const KindInfo* ForObject(std::string_view api_version, std::string_view kind) const;
  // By URL parts: /apis/{group}/{version}/.../{plural}.
  const KindInfo* ForResource(std::string_view group, std::string_view version,
                              std::string_view plural) const;
  // By any name a user types: short name ("sbs"), plural, singular, kind ("SandboxSet",
  // case-insensitive), optionally qualified by group ("sandboxsets.agents.kruise.io").
  const KindInfo* Resolve(std::string_view name) const;

  const std::vector<const KindInfo*>& All() const { return all_; }

 private:
  std::vector<std::unique_ptr<KindInfo>> kinds_;
  std::vector<const KindInfo*> all_;
};

// Adds the built-in kinds: Sandbox, SandboxSet, SandboxClaim, SandboxTemplate,
// SandboxUpdateOps, Checkpoint, TrafficPolicy, PoolAutoscaler (agents.kruise.io/v1alpha1) and Node,
// Event, ResourceQuota, Volume (warren.dev/v1alpha1).
void RegisterBuiltinKinds(KindRegistry& registry);

// A process-wide registry holding the built-in kinds, created on first use.
const KindRegistry& BuiltinKinds();

// The built-in kinds, for code that names one directly (store.Get(api::SandboxKind(), ...)).
const KindInfo& SandboxKind();
const KindInfo& SandboxSetKind();
const KindInfo& SandboxClaimKind();
const KindInfo& SandboxTemplateKind();
const KindInfo& SandboxUpdateOpsKind();
const KindInfo& CheckpointKind();
const KindInfo& TrafficPolicyKind();
const KindInfo& PoolAutoscalerKind();
const KindInfo& NodeKind();
const KindInfo& ResourceQuotaKind();
const KindInfo& VolumeKind();
const KindInfo& ImagePullJobKind();
const KindInfo& AdvancedCronJobKind();
const KindInfo& EventKind();

}  // namespace warren::api
