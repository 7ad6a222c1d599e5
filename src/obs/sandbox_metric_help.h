#pragma once

// HELP texts of the reference's families that more than one module records (the node or a
// controller with source="k8s", the E2B API with source="e2b"). A name is exposed with one HELP
// line, so both sides use the same words.
namespace warren::obs::help {

inline constexpr const char* kPauseDuration =
    "Time to pause a sandbox: on the node (source k8s) the freeze or stop and the status write; "
    "on the E2B API (source e2b) the request until the sandbox is Paused.";
inline constexpr const char* kResumeDuration =
    "Time to resume a sandbox: on the node (source k8s) the thaw or boot until envd answers; on "
    "the E2B API (source e2b) the request until the sandbox is Ready and initialised.";
inline constexpr const char* kRecycleDuration =
    "Time to recycle a sandbox: by the recycler (source k8s) the reset and return to its pool; "
    "by the E2B API (source e2b) the kill that hands it to the recycler.";
inline constexpr const char* kClaimDuration =
    "Time to claim a sandbox: by the E2B API (source e2b) the claim; for a SandboxClaim "
    "(source k8s) from its creation to Completed.";

}  // namespace warren::obs::help
