#pragma once

// Label, annotation and finalizer keys of OpenKruise Agents (reference §1.12), so every module
// spells them the same way.

namespace warren::api::labels {

inline constexpr const char* kSandboxPool = "agents.kruise.io/sandbox-pool";
inline constexpr const char* kSandboxTemplate = "agents.kruise.io/sandbox-template";
inline constexpr const char* kSandboxClaimed = "agents.kruise.io/sandbox-claimed";
inline constexpr const char* kClaimName = "agents.kruise.io/claim-name";
inline constexpr const char* kTemplateHash = "agents.kruise.io/template-hash";
inline constexpr const char* kReservedFailedSandbox = "agents.kruise.io/reserved-failed-sandbox";
inline constexpr const char* kSandboxName = "agents.kruise.io/sandbox-name";
inline constexpr const char* kAllowInternetAccess = "agents.kruise.io/allow-internet-access";
inline constexpr const char* kSandboxId = "agents.kruise.io/sandbox-id";
inline constexpr const char* kUpdateOps = "agents.kruise.io/update-ops";
inline constexpr const char* kUpgradeFailed = "agents.kruise.io/upgrade-failed";
inline constexpr const char* kPodTemplateHash = "pod-template-hash";
inline constexpr const char* kCheckpointType = "agents.kruise.io/checkpoint-type";
inline constexpr const char* kCheckpointId = "agents.kruise.io/checkpoint-id";

}  // namespace warren::api::labels

namespace warren::api::annotations {

inline constexpr const char* kLock = "agents.kruise.io/lock";
inline constexpr const char* kOwner = "agents.kruise.io/owner";
inline constexpr const char* kClaimTimestamp = "agents.kruise.io/claim-timestamp";
inline constexpr const char* kRestoreFrom = "agents.kruise.io/restore-from";
inline constexpr const char* kInitRuntimeRequest = "agents.kruise.io/init-runtime-request";
inline constexpr const char* kSandboxId = "agents.kruise.io/sandbox-id";
inline constexpr const char* kCleanupEnabled = "agents.kruise.io/cleanup-enabled";
inline constexpr const char* kCleanup = "agents.kruise.io/cleanup";
inline constexpr const char* kCleanupRetainOnFailure = "agents.kruise.io/cleanup-retain-on-failure";
inline constexpr const char* kUpdatedMetadataInClaim = "agents.kruise.io/updated-metadata-in-claim";
inline constexpr const char* kRuntimeUrl = "agents.kruise.io/runtime-url";
inline constexpr const char* kRuntimeAccessToken = "agents.kruise.io/runtime-access-token";
inline constexpr const char* kRuntimeTlsPort = "agents.kruise.io/runtime-tls-port";
inline constexpr const char* kReservePausedSandboxDuration =
    "agents.kruise.io/reserve-paused-sandbox-duration";
inline constexpr const char* kCleanupCandidate = "agents.kruise.io/cleanup-candidate";
inline constexpr const char* kSandboxPriority = "agents.kruise.io/sandbox-priority";
inline constexpr const char* kUpgradeResumeTrigger = "agents.kruise.io/upgrade-resume-trigger";
inline constexpr const char* kTraceContext = "agents.kruise.io/trace-context";
// Warren's own: what `warren apply` last applied, for computing removals (like kubectl's
// last-applied-configuration).
inline constexpr const char* kLastApplied = "warren.dev/last-applied-configuration";
// Warren's sealed secrets of a sandbox (api/sandbox_secrets.h): envd's access token and the
// /init body (env vars included), encrypted under the install's seal key and bound to the
// object, so a reader of the object sees neither. They replace OpenKruise's plain-text
// runtime-access-token and init-runtime-request, which Warren no longer writes.
inline constexpr const char* kSecretPrefix = "secrets.warren.dev/";
inline constexpr const char* kSealedAccessToken = "secrets.warren.dev/access-token";
inline constexpr const char* kSealedInitRequest = "secrets.warren.dev/init-request";
// The token every port but envd's asks for when the sandbox is not public (E2B
// network.allowPublicTraffic: false; header e2b-traffic-access-token).
inline constexpr const char* kSealedTrafficToken = "secrets.warren.dev/traffic-token";
// The sandbox's egress policy as E2B states it ({"allowInternetAccess", "allowOut", "denyOut"},
// sbnet/egress_policy.h); absent = every destination the node allows. Changing it changes
// the running sandbox's policy.
inline constexpr const char* kNetwork = "warren.dev/network";
// What the TrafficPolicies selecting the sandbox add to it, merged, in the same form; written
// by the TrafficPolicy controller (controller/traffic_policy_controller.h), read by the node.
inline constexpr const char* kTrafficPolicy = "warren.dev/traffic-policy";
// E2B's volumeMounts of a create: [{"name": VOLUME, "path": MOUNT PATH}], Volumes of the
// sandbox's own namespace that the node mounts into the main container (beside the template's
// own volumes). Read when the sandbox is made.
inline constexpr const char* kVolumeMounts = "warren.dev/volume-mounts";
// `warren restart sbx`: the RFC 3339 time of a restart request. The node agent stops every
// process of the sandbox and starts them again on the same writable layer, then writes that
// value to status.restartedFor, so the asker knows its request (not an older one) was done.
inline constexpr const char* kRestartRequestedAt = "warren.dev/restart-requested-at";

}  // namespace warren::api::annotations

namespace warren::api::finalizers {

inline constexpr const char* kSandbox = "agents.kruise.io/sandbox";
inline constexpr const char* kCheckpoint = "agents.kruise.io/checkpoint";
// A SandboxUpdateOps keeps it until it has taken its labels off the sandboxes it selected.
inline constexpr const char* kSandboxUpdateOps = "agents.kruise.io/sandbox-update-ops";

}  // namespace warren::api::finalizers
