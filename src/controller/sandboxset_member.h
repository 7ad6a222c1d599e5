#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "api/object.h"
#include "base/clock.h"
#include "controller/sandboxset_revision.h"

namespace warren::controller {

// Annotations Warren adds to the claim protocol (the reference's keys are in api/types/labels.h).
namespace pool_annotations {
// RFC 3339 deadline of a claim in progress: set by the claim's compare-and-swap, removed when
// the claim completes (after envd /init and the route). Still present after the deadline means
// the claimer died mid-claim: the claim is rolled back (the sandbox is reset and returns to
// the pool), so a failed claim never strands a member.
inline constexpr const char* kClaimPending = "warren.dev/claim-pending";
// The member's own spec.pauseStrategy (JSON, "null" = none) while a claim changed it (a pause
// that keeps files only); a recycle puts it back.
inline constexpr const char* kPoolPauseStrategy = "warren.dev/pool-pause-strategy";
// Set while a claimed sandbox is being reset for its pool (recycle), with the start time.
inline constexpr const char* kRecycling = "warren.dev/recycling";
}  // namespace pool_annotations

// Where a member of a pool stands (the reference's GetSandboxState).
enum class MemberState {
  kCreating,     // not yet Running and Ready (or Paused, Recycling...): will become available
  kAvailable,    // Running, Ready, unclaimed, unlocked: can be claimed
  kHibernated,   // paused while unclaimed (idle, spec.pauseStrategy.idleSeconds): stock that a
                 // claim takes when no member is running, waking it
  kUsed,         // claimed (no longer counted by its set)
  kDead,         // Failed or Succeeded: to be deleted and replaced
  kTerminating,  // being deleted
};
std::string_view MemberStateName(MemberState state);

MemberState ClassifyMember(const api::Object& sandbox);

// Running with condition Ready=True.
bool IsRunningAndReady(const api::Object& sandbox);
// Claimable: kAvailable, and owned by a SandboxSet (its controller reference).
bool IsClaimable(const api::Object& sandbox);
// The pool's stock: a member a claim can take, running (kAvailable) or to be woken
// (kHibernated).
bool IsStock(MemberState state);
// spec.pauseStrategy.idleSeconds, or 0 (never paused for idleness).
int64_t IdlePauseSeconds(const api::Object& sandbox);
// The uid of the SandboxSet that controls `sandbox` (its member), or null.
const std::string* SetOwnerUid(const api::Object& sandbox);
// The pool (SandboxSet name) a sandbox belongs to by label, or "".
std::string_view PoolOf(const api::Object& sandbox);

// A new member of `set` at `revision`: generateName "<sbs>-", labels sandbox-pool, template-hash,
// sandbox-claimed=false and sandbox-id (label and annotation, a fresh E2B-style id), the set as
// controller owner, spec.templateRef to the revision's SandboxTemplate, and the set's
// pauseStrategy, persistentContents, runtimes and cleanup-enabled annotation.
api::Object MakeMember(const api::Object& set, const TemplateRevision& revision);

// Sorts older first: creation time, then name.
bool OlderFirst(const api::Object& a, const api::Object& b);

}  // namespace warren::controller
