#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// PodUnavailableBudget (policy.kruise.io/v1alpha1, pub): how many of the Sandboxes it selects
// may be unavailable at once; an eviction that would take more is refused (openkruise-core.md
// §4). "Pods" in the field names are Sandboxes here; the names stay Kruise's so its manifests
// apply unchanged. Groups (`podGroupPolicy`) follow Kruise's unmerged PR #2278 (§4.4): the
// budget then counts groups of Sandboxes sharing a label value, and a group is unavailable when
// any member is. The math is controller/disruption_budget.h.

// The SandboxSet whose members the budget protects (Kruise: a workload with a scale).
struct PubTargetReference {
  WARREN_API_STRUCT;
  std::string api_version;  // agents.kruise.io/v1alpha1 (default)
  std::string kind;         // SandboxSet
  std::string name;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("name", s.name);
  }
};

// The budget counts groups: the selected Sandboxes sharing the value of label `groupLabelKey`
// form one group (a Sandbox without the label is a group of its own). A group is available when
// every member is, and, with `groupSize`, when at least that many members are there and
// available (a member deleted and not yet replaced leaves its group short).
struct PodGroupPolicy {
  WARREN_API_STRUCT;
  std::string group_label_key;        // e.g. warren.dev/group
  std::optional<int32_t> group_size;  // >= 1; unset: the members there now

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("groupLabelKey", s.group_label_key);
    v("groupSize", s.group_size);
  }
};

// Exactly one of selector / targetRef, exactly one of maxUnavailable / minAvailable (admission).
struct PodUnavailableBudgetSpec {
  WARREN_API_STRUCT;
  std::optional<LabelSelectorSpec> selector;
  std::optional<PubTargetReference> target_ref;
  std::optional<IntOrString> max_unavailable;
  std::optional<IntOrString> min_available;
  std::optional<PodGroupPolicy> pod_group_policy;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("selector", s.selector);
    v("targetRef", s.target_ref);
    v("maxUnavailable", s.max_unavailable);
    v("minAvailable", s.min_available);
    v("podGroupPolicy", s.pod_group_policy);
  }
};

// Counts are of Sandboxes, or of groups with a podGroupPolicy.
struct PodUnavailableBudgetStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  // Sandboxes whose eviction was admitted, until their deletion is seen (or 20 s pass).
  std::map<std::string, base::WallTime> disrupted_pods;
  // Kruise's record of admitted in-place updates; Warren admits none, so it stays empty.
  std::map<std::string, base::WallTime> unavailable_pods;
  // Groups that were unavailable (or had a member evicted), since when; a group leaves when it is
  // seen whole and available again.
  std::map<std::string, base::WallTime> unavailable_pod_groups;
  int32_t unavailable_allowed = 0;
  int32_t current_available = 0;
  int32_t desired_available = 0;
  int32_t total_replicas = 0;
  std::vector<Condition> conditions;  // DisruptionAllowed, as Kubernetes' PodDisruptionBudget

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("disruptedPods", s.disrupted_pods);
    v("unavailablePods", s.unavailable_pods);
    v("unavailablePodGroups", s.unavailable_pod_groups);
    v("unavailableAllowed", s.unavailable_allowed);
    v("currentAvailable", s.current_available);
    v("desiredAvailable", s.desired_available);
    v("totalReplicas", s.total_replicas);
    v("conditions", s.conditions);
  }
};

}  // namespace warren::api
