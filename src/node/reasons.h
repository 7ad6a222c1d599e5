#pragma once

// The reasons the node agent writes into a Sandbox's conditions and Events (CamelCase, as
// Kubernetes spells them). A human reads them in `warren get events` / `warren describe sbx`;
// the E2B API and controllers may match on them.

namespace warren::node::reasons {

// Failures a human can act on (each also becomes a Warning Event).
inline constexpr const char* kImageNotFound = "ImageNotFound";            // not in the image store
inline constexpr const char* kErrImagePull = "ErrImagePull";              // a registry pull failed
inline constexpr const char* kInvalidImage = "InvalidImageName";          // a name Warren reserves
inline constexpr const char* kCheckpointNotFound = "CheckpointNotFound";  // restore-from
inline constexpr const char* kInvalidResources = "InvalidResources";
inline constexpr const char* kInvalidTemplate = "InvalidTemplate";
inline constexpr const char* kInvalidNetwork = "InvalidNetwork";
inline constexpr const char* kNetworkPolicyFailed = "NetworkPolicyFailed";
inline constexpr const char* kInvalidVolume = "InvalidVolume";
inline constexpr const char* kVolumeNotFound = "VolumeNotFound";
inline constexpr const char* kVolumeNotReady = "VolumeNotReady";
inline constexpr const char* kTemplateNotFound = "TemplateNotFound";  // templateRef missing
inline constexpr const char* kRuntimeClassNotAvailable = "RuntimeClassNotAvailable";
inline constexpr const char* kCommandNotFound = "CommandNotFound";  // the template command
inline constexpr const char* kStartError = "StartError";            // it exists but could not start
inline constexpr const char* kOOMKilled = "OOMKilled";
inline constexpr const char* kError = "Error";  // pid 1 / the command failed (exit code)
inline constexpr const char* kEnvdNotReady = "EnvdNotReady";
inline constexpr const char* kEnvdMissing = "EnvdMissing";    // the warren-envd binary
inline constexpr const char* kCreateFailed = "CreateFailed";  // the runtime refused
inline constexpr const char* kSandboxLost = "SandboxLost";    // vanished (host reboot)
// Written by the control plane (controller/node_lifecycle_controller.h) when this node stopped
// renewing its heartbeat: the sandbox is Failed and replaced; the agent only destroys it.
inline constexpr const char* kNodeLost = "NodeLost";
inline constexpr const char* kSandboxIdConflict = "SandboxIdConflict";
inline constexpr const char* kMissingSandboxId = "MissingSandboxId";
inline constexpr const char* kBackOff = "CrashLoopBackOff";  // waiting to restart
inline constexpr const char* kPauseFailed = "PauseFailed";
inline constexpr const char* kResumeFailed = "ResumeFailed";
// The runtime could not write the processes of a sandbox to disk (gVisor: a TCP socket a
// process watches with epoll); the checkpoint ended them and the pause kept the files only.
inline constexpr const char* kHibernateFailed = "HibernateFailed";
inline constexpr const char* kInitFailed = "RuntimeInitFailed";  // replaying /init
// The template names ephemeral-storage and this node cannot enforce it (README "Ephemeral
// storage"); the sandbox is refused rather than run without the limit it asked for.
inline constexpr const char* kEphemeralStorageNotEnforced = "EphemeralStorageNotEnforced";
// The host file system the node keeps sandboxes on has less free space than its reserve:
// nothing new starts until space comes back (retried), as a kubelet under DiskPressure.
inline constexpr const char* kDiskPressure = "DiskPressure";

// Normal progress.
inline constexpr const char* kCreating = "Creating";
inline constexpr const char* kSandboxReady = "SandboxReady";
inline constexpr const char* kCompleted = "Completed";  // the template command exited 0
inline constexpr const char* kPaused = "FreezePauseSucceed";
inline constexpr const char* kStopPaused = "StopPauseSucceed";       // processes ended, files kept
inline constexpr const char* kHibernated = "HibernatePauseSucceed";  // processes and memory on disk
inline constexpr const char* kResuming = "Resuming";
inline constexpr const char* kResumed = "ResumeSucceed";
inline constexpr const char* kRestarted = "Restarted";
inline constexpr const char* kTerminating = "Terminating";
inline constexpr const char* kInitSucceeded = "Succeeded";

// In-place updates (inplace_update.cc), in the InplaceUpdate condition (OpenKruise Agents'
// reasons) and Events (OpenKruise's CloneSet names).
inline constexpr const char* kInplaceUpdating = "InplaceUpdating";
inline constexpr const char* kInplaceSucceeded = "Succeeded";
inline constexpr const char* kInplaceFailed = "Failed";
inline constexpr const char* kRecreating = "Recreating";  // the change does not qualify
inline constexpr const char* kRecreated = "Recreated";
inline constexpr const char* kUpdatedInPlace = "SuccessfulUpdateInPlace";
inline constexpr const char* kFailedUpdateInPlace = "FailedUpdateInPlace";
inline constexpr const char* kRecreatedForUpdate = "SuccessfulUpdateRecreate";

}  // namespace warren::node::reasons

namespace warren::node::conditions {

inline constexpr const char* kReady = "Ready";
inline constexpr const char* kSandboxPaused = "SandboxPaused";
inline constexpr const char* kRuntimeInitialized = "RuntimeInitialized";
// True while the memory limit kills processes of a sandbox that keeps running.
inline constexpr const char* kOOMKilled = "OOMKilled";
// An update of the template a running sandbox runs: False/InplaceUpdating while it is made,
// True/Succeeded (in place) or True/Recreated, False/Failed naming what failed.
inline constexpr const char* kInplaceUpdate = "InplaceUpdate";

}  // namespace warren::node::conditions
