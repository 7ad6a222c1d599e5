#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "api/types/pod_unavailable_budget.h"
#include "base/clock.h"
#include "base/result.h"

namespace warren::controller {

// The math of a PodUnavailableBudget (api/types/pod_unavailable_budget.h; openkruise-core.md
// §4.2–4.4) as pure functions, shared by the controller that keeps the budget's status
// (pub_controller.h) and the eviction route that admits or refuses an eviction
// (server/eviction_api.h), so both judge alike.
//
// Members: the Sandboxes of the budget's namespace it selects (spec.selector, or the members of
// the SandboxSet of spec.targetRef), except finished ones (Succeeded, Failed), which are nobody's
// to protect (Kruise counts active pods only). A member is available when it is Running with
// condition Ready True, not being deleted and not in status.disruptedPods.
//
// Units, what the counts count: each member; or, with spec.podGroupPolicy, each group (members
// sharing the value of label groupLabelKey; a member without it is the group "sandbox/<name>",
// which no label value can spell). A group is available when every member is and, with
// groupSize, at least groupSize members are there. An eviction admitted is remembered until its
// deletion is seen: the sandbox in disruptedPods, its group in unavailablePodGroups; such an entry
// counts as one unavailable unit even once the sandbox is gone, so a second eviction cannot take
// the slot the first one used before the controller has seen the first deletion.
//
// Counts (Kruise's): totalReplicas = the units (the SandboxSet's spec.replicas for a targetRef
// budget without groups); desiredAvailable = total − maxUnavailable (a percentage rounded up, as
// Kruise) or minAvailable (a percentage rounded up); currentAvailable = available units;
// unavailableAllowed = max(0, current − desired).

// An admitted eviction whose deletion is never seen stops counting after this (Kruise: 20 s).
inline constexpr std::chrono::seconds kDisruptedSandboxTtl{20};

// One thing the budget counts: a Sandbox, or a group of them.
struct BudgetUnit {
  std::string name;                  // the sandbox's name, or the group's label value
  std::vector<std::string> members;  // sandbox names, sorted
  bool available = false;
  std::string why;  // when unavailable: "sandbox s1 is not Ready"
};

// A budget judged against the sandboxes there now.
struct BudgetView {
  std::string key;              // "namespace/name"
  std::string group_label_key;  // "" when the budget counts sandboxes
  std::string constraint;       // "maxUnavailable 1", "minAvailable 50% (2 of 3)"
  std::map<std::string, BudgetUnit> units;
  std::map<std::string, std::string> unit_of;  // member sandbox → its unit
  // The status to keep: maps pruned (expired entries; with `prune`, entries of sandboxes and
  // groups seen gone or healthy), unhealthy groups added, counts and condition DisruptionAllowed.
  api::PodUnavailableBudgetStatus status;

  bool grouped() const { return !group_label_key.empty(); }
  // "group" or "sandbox", as messages name a unit.
  std::string_view unit_word() const { return grouped() ? "group" : "sandbox"; }
  // The unavailable units, by name.
  std::vector<std::string> Unavailable() const;
};

// Whether `budget` selects `sandbox` (same namespace, selector or targetRef membership).
// InvalidArgument for a spec that does not decode or a selector that does not parse.
Result<bool> BudgetSelects(const api::Object& budget, const api::Object& sandbox);

// Judges `budget` against `sandboxes` (its namespace's; others are ignored). `target_replicas`:
// spec.replicas of the targetRef's SandboxSet, when there is one. `prune`: the caller's sandbox
// list reflects at least the revision of `budget` (the controller waits for its cache to get
// there), so a disruptedPods entry of a sandbox missing from it was seen deleted and can go.
Result<BudgetView> EvaluateBudget(const api::Object& budget,
                                  const std::vector<const api::Object*>& sandboxes,
                                  std::optional<int32_t> target_replicas, base::WallTime now,
                                  bool prune);

struct EvictionVerdict {
  bool allowed = false;
  // The eviction must be written into the budget's status (EvictionStatus) before the delete.
  bool record = false;
  // Refused: "Cannot evict sandbox as it would violate the sandbox's disruption budget
  // team-a/pub-x: group g1 of 3 would be unavailable, 1 group(s) already unavailable (g2:
  // sandbox g2-b is not Ready), maxUnavailable 1". Allowed: why it cost nothing, or "".
  std::string message;
};

// Whether evicting `sandbox` keeps `view`'s budget. Like Kruise: a sandbox the budget does not
// count, or one already unavailable, goes without using the budget; a sandbox of a group that is
// already unavailable too (taking a broken group further down costs nothing); else it takes one
// of unavailableAllowed, or is refused.
EvictionVerdict JudgeEviction(const BudgetView& view, const api::Object& sandbox);

// `view.status` with the eviction of `sandbox` admitted at `now`: the sandbox in disruptedPods,
// its group in unavailablePodGroups, and the counts one less available when its unit was.
api::PodUnavailableBudgetStatus EvictionStatus(const BudgetView& view, const api::Object& sandbox,
                                               base::WallTime now);

// Writes `status` as the budget's status, its four counts always (0 included: Kruise's fields are
// not omitempty, and `warren get pub` shows them).
void EncodeBudgetStatus(const api::PodUnavailableBudgetStatus& status, api::Object& budget);

// The earliest time a disruptedPods entry of `status` stops counting; nullopt when none.
std::optional<base::WallTime> NextExpiry(const api::PodUnavailableBudgetStatus& status);

// Whether a sandbox phase is finished (Succeeded, Failed): not protected, not drained.
bool IsFinishedPhase(std::string_view phase);

}  // namespace warren::controller
