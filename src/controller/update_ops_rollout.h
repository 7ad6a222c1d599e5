#pragma once

// The decision half of a SandboxUpdateOps rollout (controller/sandbox_update_ops_controller.h
// makes the writes): given the selected sandboxes in name order and where each one is, which to
// start now, and the counts the ops reports. A pure function, so the budget, pause, partition
// and stop rules are tested without a store.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/int_or_string.h"
#include "base/result.h"

namespace warren::controller {

// Where one selected sandbox is in the rollout.
enum class UpdateState {
  kPending,   // not written yet: still on its old template
  kUpdating,  // given the new template; the node has not finished
  kUpdated,   // status.updateRevision is the target and it is Ready
  kFailed,    // the node gave up on the target (status.failedUpdateRevision)
};

struct RolloutMember {
  std::string name;
  UpdateState state = UpdateState::kPending;
};

struct RolloutInput {
  std::vector<RolloutMember> members;  // every selected sandbox, sorted by name
  api::IntOrString max_unavailable = api::IntOrString::Int(1);
  std::optional<api::IntOrString> partition;
  bool paused = false;   // spec.paused: the ones in flight finish, none is started
  bool stopped = false;  // the ops is finished (or blocked): none is started
};

struct RolloutPlan {
  std::vector<std::string> start;  // to write now, in name order
  int32_t replicas = 0;            // selected
  int32_t updated = 0;
  int32_t updating = 0;  // including `start`
  int32_t failed = 0;
  int32_t partition = 0;        // resolved: how many stay on the old template
  int32_t max_unavailable = 1;  // resolved: at most this many updating at once
  // Every selected sandbox but the partition is updated and none is in flight or failed.
  bool done = false;
};

// CloneSet's partition (reference/openkruise-core.md §1.7, CalculatePartitionReplicas): a
// percentage rounds up, but a percentage other than "100%" that comes to every replica keeps
// one to update; clamped to [0, replicas]. A malformed percentage is InvalidArgument.
Result<int32_t> ResolvePartition(const std::optional<api::IntOrString>& partition,
                                 int32_t replicas);
// maxUnavailable of `replicas`: a percentage rounds up (CloneSet with maxSurge 0); at least 1.
Result<int32_t> ResolveMaxUnavailable(const api::IntOrString& max_unavailable, int32_t replicas);

// Starts pending sandboxes in name order while fewer than replicas - partition have been
// touched and fewer than max_unavailable are updating; starts none once any has failed (a
// failed hook stops the rollout), nor while paused or stopped.
Result<RolloutPlan> PlanRollout(const RolloutInput& input);

}  // namespace warren::controller
