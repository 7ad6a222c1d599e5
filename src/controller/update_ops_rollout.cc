#include "controller/update_ops_rollout.h"

#include <algorithm>

namespace warren::controller {

Result<int32_t> ResolvePartition(const std::optional<api::IntOrString>& partition,
                                 int32_t replicas) {
  if (!partition) return 0;
  ASSIGN_OR_RETURN(int64_t value, partition->Scaled(replicas, /*round_up=*/true));
  if (replicas > 1 && value == replicas && partition->is_string && partition->str_value != "100%") {
    value = replicas - 1;
  }
  return static_cast<int32_t>(std::clamp<int64_t>(value, 0, replicas));
}

Result<int32_t> ResolveMaxUnavailable(const api::IntOrString& max_unavailable, int32_t replicas) {
  ASSIGN_OR_RETURN(int64_t value, max_unavailable.Scaled(replicas, /*round_up=*/true));
  return static_cast<int32_t>(std::clamp<int64_t>(value, 1, std::max<int64_t>(replicas, 1)));
}

Result<RolloutPlan> PlanRollout(const RolloutInput& input) {
  RolloutPlan plan;
  plan.replicas = static_cast<int32_t>(input.members.size());
  ASSIGN_OR_RETURN(plan.partition, ResolvePartition(input.partition, plan.replicas));
  ASSIGN_OR_RETURN(plan.max_unavailable,
                   ResolveMaxUnavailable(input.max_unavailable, plan.replicas));
  for (const auto& m : input.members) {
    plan.updated += m.state == UpdateState::kUpdated;
    plan.updating += m.state == UpdateState::kUpdating;
    plan.failed += m.state == UpdateState::kFailed;
  }
  const int32_t expected = plan.replicas - plan.partition;
  int32_t touched = plan.updated + plan.updating + plan.failed;
  if (!input.paused && !input.stopped && plan.failed == 0) {
    for (const auto& m : input.members) {
      if (touched >= expected || plan.updating >= plan.max_unavailable) break;
      if (m.state != UpdateState::kPending) continue;
      plan.start.push_back(m.name);
      ++plan.updating;
      ++touched;
    }
  }
  plan.done = plan.failed == 0 && plan.updating == 0 && plan.updated >= expected;
  return plan;
}

}  // namespace warren::controller
