#pragma once

#include "api/kinds.h"
#include "api/object.h"
#include "api/validation.h"
#include "base/status.h"

namespace warren::api {

// Admission: what every write passes through before the store keeps it. Failures are
// InvalidArgument with every problem named by field path:
//   SandboxSet.agents.kruise.io "pool" is invalid: spec.replicas: Invalid value: -1: must be >= 0

// A create: apiVersion/kind match `kind`, metadata is valid (name or generateName, namespace
// present exactly for namespaced kinds, label/annotation/finalizer syntax, owner references),
// then the kind's own defaulting and validation (KindInfo::admit).
Status AdmitCreate(const KindInfo& kind, Object& object);
// An update of the main resource: as AdmitCreate, plus KindInfo::admit_update against `old`.
Status AdmitUpdate(const KindInfo& kind, const Object& old_object, Object& object);
// A write of the status subresource.
Status AdmitStatus(const KindInfo& kind, Object& object);

// Metadata checks alone (used by the above).
void ValidateObjectMeta(const KindInfo& kind, const ObjectMeta& meta, FieldErrors& errors);

// The kinds' own hooks (KindInfo::admit etc.), in agents_admission.cc and warren_admission.cc.
Status AdmitSandbox(Object& object);
// The sandbox id label (agents.kruise.io/sandbox-id) is immutable once set.
Status AdmitSandboxUpdate(const Object& old_object, const Object& object);
Status AdmitSandboxStatus(Object& object);
Status AdmitSandboxSet(Object& object);
Status AdmitSandboxSetStatus(Object& object);
Status AdmitSandboxClaim(Object& object);
Status AdmitSandboxClaimUpdate(const Object& old_object, const Object& object);
Status AdmitSandboxClaimStatus(Object& object);
Status AdmitSandboxTemplate(Object& object);
Status AdmitSandboxUpdateOps(Object& object);
Status AdmitSandboxUpdateOpsUpdate(const Object& old_object, const Object& object);
Status AdmitSandboxUpdateOpsStatus(Object& object);
Status AdmitImagePullJob(Object& object);
Status AdmitAdvancedCronJob(Object& object);
Status AdmitAdvancedCronJobStatus(Object& object);
Status AdmitImagePullJobUpdate(const Object& old_object, const Object& new_object);
Status AdmitImagePullJobStatus(Object& object);
Status AdmitVolume(Object& object);
Status AdmitVolumeUpdate(const Object& old_object, const Object& new_object);
Status AdmitVolumeStatus(Object& object);
Status AdmitCheckpoint(Object& object);
Status AdmitCheckpointStatus(Object& object);
Status AdmitTrafficPolicy(Object& object);
Status AdmitTrafficPolicyStatus(Object& object);
// In pool_autoscaler_admission.cc.
Status AdmitPoolAutoscaler(Object& object);
Status AdmitPoolAutoscalerStatus(Object& object);
Status AdmitNode(Object& object);
Status AdmitNodeStatus(Object& object);
Status AdmitEvent(Object& object);
Status AdmitLease(Object& object);
Status AdmitResourceQuota(Object& object);
Status AdmitResourceQuotaStatus(Object& object);

}  // namespace warren::api
