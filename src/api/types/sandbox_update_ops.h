#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

struct UpdateOpsStrategy {
  WARREN_API_STRUCT;
  std::string type;                            // Recreate (default) | CheckpointRestore
  std::optional<IntOrString> max_unavailable;  // default 1

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("type", s.type);
    v("maxUnavailable", s.max_unavailable);
  }
};

struct StateFilter {
  WARREN_API_STRUCT;
  std::vector<std::string> states;  // default [Running]; may include Paused

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("states", s.states);
  }
};

// SandboxUpdateOps (agents.kruise.io/v1alpha1, suo): batch upgrade of selected sandboxes.
struct SandboxUpdateOpsSpec {
  WARREN_API_STRUCT;
  std::optional<LabelSelectorSpec> selector;  // required, immutable
  UpdateOpsStrategy update_strategy;
  RawJson patch;  // strategic-merge patch of the sandbox pod template; immutable
  std::optional<SandboxLifecycle> lifecycle;  // immutable
  bool paused = false;
  // Warren's addition, with CloneSet's meaning (reference/openkruise-core.md §1.7): how many of
  // the selected sandboxes stay on their old template — the last ones in name order. A count
  // or a percentage of the selected ones (rounded up). Editable, so a canary can go on.
  std::optional<IntOrString> partition;
  std::optional<StateFilter> state_filter;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("selector", s.selector);
    v("updateStrategy", s.update_strategy);
    v("patch", s.patch);
    v("lifecycle", s.lifecycle);
    v("paused", s.paused);
    v("partition", s.partition);
    v("stateFilter", s.state_filter);
  }
};

struct SandboxUpdateOpsStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::string phase;  // Pending, Updating, Completed, Failed
  int32_t replicas = 0;
  int32_t updated_replicas = 0;
  int32_t failed_replicas = 0;
  int32_t updating_replicas = 0;
  std::vector<Condition> conditions;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("phase", s.phase);
    v("replicas", s.replicas);
    v("updatedReplicas", s.updated_replicas);
    v("failedReplicas", s.failed_replicas);
    v("updatingReplicas", s.updating_replicas);
    v("conditions", s.conditions);
  }
};

// SandboxUpdateOps phases (status.phase).
namespace update_ops_phase {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kUpdating = "Updating";
inline constexpr const char* kCompleted = "Completed";
inline constexpr const char* kFailed = "Failed";
}  // namespace update_ops_phase

}  // namespace warren::api
