#include "api/kinds.h"

#include <fmt/format.h>

#include "api/admission.h"
#include "api/policy_kinds.h"
#include "api/types/lease.h"
#include "base/check.h"
#include "base/strings.h"

namespace warren::api {

std::string KindInfo::ApiVersion() const {
  return group.empty() ? version : fmt::format("{}/{}", group, version);
}

std::string KindInfo::GroupKind() const {
  return group.empty() ? kind : fmt::format("{}.{}", kind, group);
}

std::string KindInfo::Resource() const {
  return group.empty() ? plural : fmt::format("{}.{}", plural, group);
}

const KindInfo& KindRegistry::Add(KindInfo info) {
  for (const KindInfo* k : all_) {
    CHECK_MSG(!(k->group == info.group && k->kind == info.kind), "duplicate kind " << info.kind);
    CHECK_MSG(!(k->group == info.group && k->plural == info.plural),
              "duplicate plural " << info.plural);
    for (const auto& s : info.short_names) {
      for (const auto& t : k->short_names) CHECK_MSG(s != t, "duplicate short name " << s);
    }
  }
  kinds_.push_back(std::make_unique<KindInfo>(std::move(info)));
  all_.push_back(kinds_.back().get());
  return *kinds_.back();
}

const KindInfo* KindRegistry::ForObject(std::string_view api_version, std::string_view kind) const {
  for (const KindInfo* k : all_) {
    if (k->kind == kind && k->ApiVersion() == api_version) return k;
  }
  return nullptr;
}

const KindInfo* KindRegistry::ForResource(std::string_view group, std::string_view version,
                                          std::string_view plural) const {
  for (const KindInfo* k : all_) {
    if (k->group == group && k->version == version && k->plural == plural) return k;
  }
  return nullptr;
}

const KindInfo* KindRegistry::Resolve(std::string_view name) const {
  std::string lower = base::AsciiLower(name);
  std::string_view n = lower;
  std::string_view group;
  if (auto dot = n.find('.'); dot != std::string_view::npos) {
    group = n.substr(dot + 1);
    n = n.substr(0, dot);
  }
  for (const KindInfo* k : all_) {
    if (!group.empty() && k->group != group) continue;
    if (k->plural == n || k->singular == n || base::AsciiLower(k->kind) == n) return k;
    for (const auto& s : k->short_names) {
      if (s == n) return k;
    }
  }
  return nullptr;
}

namespace {

using Col = PrinterColumn;
using ColType = PrinterColumn::Type;

KindInfo Agents(std::string kind, std::string plural, std::string short_name) {
  KindInfo k;
  k.group = kAgentsGroup;
  k.version = kV1alpha1;
  k.singular = base::AsciiLower(kind);
  k.kind = std::move(kind);
  k.plural = std::move(plural);
  k.short_names = {std::move(short_name)};
  return k;
}

}  // namespace

void RegisterBuiltinKinds(KindRegistry& registry) {
  {
    KindInfo k = Agents("Sandbox", "sandboxes", "sbx");
    k.status_subresource = true;
    k.columns = {
        {"STATUS", ".status.phase", ColType::kString, false},
        {"CLAIMED", ".metadata.labels.agents\\.kruise\\.io/sandbox-claimed", ColType::kString,
         false},
        {"NODE", ".status.nodeName", ColType::kString, false},
        {"SANDBOX_ID", ".metadata.labels.agents\\.kruise\\.io/sandbox-id", ColType::kString, true},
        {"POOL", ".metadata.labels.agents\\.kruise\\.io/sandbox-pool", ColType::kString, true},
        {"SHUTDOWN_TIME", ".spec.shutdownTime", ColType::kString, true},
        {"PAUSE_TIME", ".spec.pauseTime", ColType::kString, true},
        {"RECYCLED", ".status.recycledCount", ColType::kInteger, true},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitSandbox;
    k.admit_update = AdmitSandboxUpdate;
    k.admit_status = AdmitSandboxStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("SandboxSet", "sandboxsets", "sbs");
    k.status_subresource = true;
    k.scale_subresource = true;
    k.columns = {
        {"DESIRED", ".spec.replicas", ColType::kInteger, false},
        {"REPLICAS", ".status.replicas", ColType::kInteger, false},
        {"AVAILABLE", ".status.availableReplicas", ColType::kInteger, false},
        {"UPDATED", ".status.updatedReplicas", ColType::kInteger, true},
        {"UPDATED_AVAILABLE", ".status.updatedAvailableReplicas", ColType::kInteger, true},
        {"REVISION", ".status.updateRevision", ColType::kString, true},
    };
    k.admit = AdmitSandboxSet;
    k.admit_status = AdmitSandboxSetStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("SandboxClaim", "sandboxclaims", "sbc");
    k.status_subresource = true;
    k.columns = {
        {"PHASE", ".status.phase", ColType::kString, false},
        {"TEMPLATE", ".spec.templateName", ColType::kString, false},
        {"DESIRED", ".spec.replicas", ColType::kInteger, false},
        {"CLAIMED", ".status.claimedReplicas", ColType::kInteger, false},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitSandboxClaim;
    k.admit_update = AdmitSandboxClaimUpdate;
    k.admit_status = AdmitSandboxClaimStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("SandboxTemplate", "sandboxtemplates", "sbt");
    k.admit = AdmitSandboxTemplate;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("SandboxUpdateOps", "sandboxupdateops", "suo");
    k.status_subresource = true;
    k.columns = {
        {"PHASE", ".status.phase", ColType::kString, false},
        {"REPLICAS", ".status.replicas", ColType::kInteger, false},
        {"UPDATED", ".status.updatedReplicas", ColType::kInteger, false},
        {"UPDATING", ".status.updatingReplicas", ColType::kInteger, false},
        {"FAILED", ".status.failedReplicas", ColType::kInteger, false},
    };
    k.admit = AdmitSandboxUpdateOps;
    k.admit_update = AdmitSandboxUpdateOpsUpdate;
    k.admit_status = AdmitSandboxUpdateOpsStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("Checkpoint", "checkpoints", "cp");
    k.status_subresource = true;
    k.columns = {
        {"SANDBOX", ".spec.sandboxName", ColType::kString, false},
        {"PHASE", ".status.phase", ColType::kString, false},
        {"CHECKPOINT_ID", ".status.checkpointId", ColType::kString, true},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitCheckpoint;
    k.admit_status = AdmitCheckpointStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("TrafficPolicy", "trafficpolicies", "tp");
    k.status_subresource = true;
    k.columns = {
        {"ACCEPTED", ".status.conditions[?(@.type==\"Accepted\")].status", ColType::kString, false},
        {"SANDBOXES", ".status.sandboxes", ColType::kInteger, false},
        {"PRIORITY", ".spec.priority", ColType::kInteger, true},
        {"MESSAGE", ".status.conditions[?(@.type==\"Accepted\")].message", ColType::kString, true},
    };
    k.admit = AdmitTrafficPolicy;
    k.admit_status = AdmitTrafficPolicyStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k = Agents("PoolAutoscaler", "poolautoscalers", "pas");
    k.status_subresource = true;
    k.columns = {
        {"TARGET", ".spec.scaleTargetRef.name", ColType::kString, false},
        {"MIN", ".spec.minReplicas", ColType::kInteger, false},
        {"MAX", ".spec.maxReplicas", ColType::kInteger, false},
        {"CURRENT", ".status.currentReplicas", ColType::kInteger, false},
        {"DESIRED", ".status.desiredReplicas", ColType::kInteger, false},
        {"AVAILABLE", ".status.currentCapacity.available", ColType::kInteger, true},
        {"LAST_SCALE", ".status.lastScaleTime", ColType::kDate, true},
        {"ACTIVE", ".status.conditions[?(@.type==\"ScalingActive\")].status", ColType::kString,
         true},
    };
    k.admit = AdmitPoolAutoscaler;
    k.admit_status = AdmitPoolAutoscalerStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kWarrenGroup;
    k.version = kV1alpha1;
    k.kind = "Node";
    k.plural = "nodes";
    k.singular = "node";
    k.short_names = {"no"};
    k.namespaced = false;
    k.status_subresource = true;
    k.columns = {
        {"READY", ".status.conditions[?(@.type==\"Ready\")].status", ColType::kString, false},
        {"SANDBOXES", ".status.sandboxes", ColType::kInteger, false},
        {"ADDRESS", ".status.address", ColType::kString, true},
        {"VERSION", ".status.version", ColType::kString, true},
        {"KERNEL", ".status.kernelVersion", ColType::kString, true},
    };
    k.admit = AdmitNode;
    k.admit_status = AdmitNodeStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kWarrenGroup;
    k.version = kV1alpha1;
    k.kind = "Event";
    k.plural = "events";
    k.singular = "event";
    k.short_names = {"ev"};
    k.columns = {
        {"TYPE", ".type", ColType::kString, false},
        {"REASON", ".reason", ColType::kString, false},
        {"OBJECT", ".involvedObject.name", ColType::kString, false},
        {"COUNT", ".count", ColType::kInteger, true},
        {"MESSAGE", ".message", ColType::kString, false},
    };
    k.admit = AdmitEvent;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kWarrenGroup;
    k.version = kV1alpha1;
    k.kind = "Volume";
    k.plural = "volumes";
    k.singular = "volume";
    k.short_names = {"vol"};
    k.status_subresource = true;
    k.columns = {
        {"PHASE", ".status.phase", ColType::kString, false},
        {"SIZE", ".spec.size", ColType::kString, false},
        {"MOUNTED_BY", ".status.mountedBy", ColType::kString, false},
        {"NODE", ".status.nodeName", ColType::kString, true},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitVolume;
    k.admit_update = AdmitVolumeUpdate;
    k.admit_status = AdmitVolumeStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kAppsGroup;
    k.version = kV1alpha1;
    k.kind = "ImagePullJob";
    k.plural = "imagepulljobs";
    k.singular = "imagepulljob";
    k.short_names = {"ipj"};
    k.status_subresource = true;
    k.columns = {
        {"TOTAL", ".status.desired", ColType::kInteger, false},
        {"ACTIVE", ".status.active", ColType::kInteger, false},
        {"SUCCEED", ".status.succeeded", ColType::kInteger, false},
        {"FAILED", ".status.failed", ColType::kInteger, false},
        {"PROGRESS", ".status.progress", ColType::kPercent, false},
        {"IMAGE", ".spec.image", ColType::kString, true},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitImagePullJob;
    k.admit_update = AdmitImagePullJobUpdate;
    k.admit_status = AdmitImagePullJobStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kAppsGroup;
    k.version = kV1alpha1;
    k.kind = "AdvancedCronJob";
    k.plural = "advancedcronjobs";
    k.singular = "advancedcronjob";
    k.short_names = {"acj"};
    k.status_subresource = true;
    k.columns = {
        {"SCHEDULE", ".spec.schedule", ColType::kString, false},
        {"TYPE", ".status.type", ColType::kString, false},
        {"LASTSCHEDULETIME", ".status.lastScheduleTime", ColType::kDate, false},
        {"PAUSED", ".spec.paused", ColType::kBoolean, true},
        {"MESSAGE", ".status.message", ColType::kString, true},
    };
    k.admit = AdmitAdvancedCronJob;
    k.admit_status = AdmitAdvancedCronJobStatus;
    registry.Add(std::move(k));
  }
  {
    KindInfo k;
    k.group = kWarrenGroup;
    k.version = kV1alpha1;
    k.kind = "ResourceQuota";
    k.plural = "resourcequotas";
    k.singular = "resourcequota";
    k.short_names = {"quota"};
    k.status_subresource = true;
    k.columns = {
        {"SANDBOXES", ".status.used.sandboxes", ColType::kString, false},
        {"CPU", ".status.used.cpu", ColType::kString, false},
        {"MEMORY", ".status.used.memory", ColType::kString, false},
        {"HARD", ".spec.hard", ColType::kString, false},
    };
    k.admit = AdmitResourceQuota;
    k.admit_status = AdmitResourceQuotaStatus;
    registry.Add(std::move(k));
  }
  {
    // Kruise's print columns (Allowed, Current, Desired, Total); counts are of groups when the
    // budget has a podGroupPolicy.
    KindInfo k;
    k.group = kPolicyGroup;
    k.version = kV1alpha1;
    k.kind = "PodUnavailableBudget";
    k.plural = "podunavailablebudgets";
    k.singular = "podunavailablebudget";
    k.short_names = {"pub"};
    k.status_subresource = true;
    k.columns = {
        {"ALLOWED", ".status.unavailableAllowed", ColType::kInteger, false},
        {"CURRENT", ".status.currentAvailable", ColType::kInteger, false},
        {"DESIRED", ".status.desiredAvailable", ColType::kInteger, false},
        {"TOTAL", ".status.totalReplicas", ColType::kInteger, false},
        {"GROUP_KEY", ".spec.podGroupPolicy.groupLabelKey", ColType::kString, true},
        {"MESSAGE", ".status.conditions[?(@.type==\"DisruptionAllowed\")].message",
         ColType::kString, true},
    };
    k.admit = AdmitPodUnavailableBudget;
    k.admit_update = AdmitPodUnavailableBudgetUpdate;
    k.admit_status = AdmitPodUnavailableBudgetStatus;
    registry.Add(std::move(k));
  }
  {
    // Kubernetes' own kind and group, so a Lease reads as one (api/types/lease.h; not in
    // kinds.h's list, so adding it recompiled nothing else).
    KindInfo k;
    k.group = kCoordinationGroup;
    k.version = "v1";
    k.kind = "Lease";
    k.plural = "leases";
    k.singular = "lease";
    k.columns = {
        {"HOLDER", ".spec.holderIdentity", ColType::kString, false},
        {"RENEWED", ".spec.renewTime", ColType::kString, true},
        {"TRANSITIONS", ".spec.leaseTransitions", ColType::kInteger, true},
    };
    k.admit = AdmitLease;
    registry.Add(std::move(k));
  }
}

const KindRegistry& BuiltinKinds() {
  static const KindRegistry* registry = [] {
    auto* r = new KindRegistry();
    RegisterBuiltinKinds(*r);
    return r;
  }();
  return *registry;
}

namespace {
const KindInfo& Builtin(std::string_view kind) {
  const KindInfo* k = BuiltinKinds().ForObject(
      kind == "Node" || kind == "Event" || kind == "ResourceQuota" || kind == "Volume"
          ? kWarrenApiVersion
      : kind == "ImagePullJob" || kind == "AdvancedCronJob" ? kAppsApiVersion
      : kind == "PodUnavailableBudget"                      ? kPolicyApiVersion
      : kind == "Lease"                                     ? kCoordinationApiVersion
                                                            : kAgentsApiVersion,
      kind);
  CHECK(k != nullptr);
  return *k;
}
}  // namespace

const KindInfo& SandboxKind() {
  static const KindInfo& k = Builtin("Sandbox");
  return k;
}
const KindInfo& SandboxSetKind() {
  static const KindInfo& k = Builtin("SandboxSet");
  return k;
}
const KindInfo& SandboxClaimKind() {
  static const KindInfo& k = Builtin("SandboxClaim");
  return k;
}
const KindInfo& SandboxTemplateKind() {
  static const KindInfo& k = Builtin("SandboxTemplate");
  return k;
}
const KindInfo& SandboxUpdateOpsKind() {
  static const KindInfo& k = Builtin("SandboxUpdateOps");
  return k;
}
const KindInfo& CheckpointKind() {
  static const KindInfo& k = Builtin("Checkpoint");
  return k;
}
const KindInfo& TrafficPolicyKind() {
  static const KindInfo& k = Builtin("TrafficPolicy");
  return k;
}
const KindInfo& PoolAutoscalerKind() {
  static const KindInfo& k = Builtin("PoolAutoscaler");
  return k;
}
const KindInfo& NodeKind() {
  static const KindInfo& k = Builtin("Node");
  return k;
}
const KindInfo& VolumeKind() {
  static const KindInfo& k = Builtin("Volume");
  return k;
}
const KindInfo& ImagePullJobKind() {
  static const KindInfo& k = Builtin("ImagePullJob");
  return k;
}
const KindInfo& AdvancedCronJobKind() {
  static const KindInfo& k = Builtin("AdvancedCronJob");
  return k;
}
const KindInfo& ResourceQuotaKind() {
  static const KindInfo& k = Builtin("ResourceQuota");
  return k;
}
const KindInfo& LeaseKind() {
  static const KindInfo& k = Builtin("Lease");
  return k;
}
const KindInfo& EventKind() {
  static const KindInfo& k = Builtin("Event");
  return k;
}
const KindInfo& PodUnavailableBudgetKind() {
  static const KindInfo& k = Builtin("PodUnavailableBudget");
  return k;
}

}  // namespace warren::api
