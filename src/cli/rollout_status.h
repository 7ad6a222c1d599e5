#pragma once

#include <string>
#include <vector>

#include "api/json.h"

namespace warren::cli {

// okactl's one-line rollout status of a SandboxSet:
//   "my-pool  Updating  1/3 updated  1/3 available"
// Updating while the status has not seen the latest spec (observedGeneration) or fewer than
// spec.replicas members are at the update revision and available; Ready after. `available` is
// the pool's available members (claimable now).
struct RolloutStatus {
  std::string name;
  bool done = false;
  int64_t desired = 0;
  int64_t updated = 0;
  int64_t available = 0;

  std::string Line() const;
  // Line with a bar of the updated members, as `set image -w` prints it:
  //   "my-pool  Updating  [###.......]  1/3 updated  1/3 available"
  std::string ProgressLine() const;
};
RolloutStatus SandboxSetRollout(const api::Json& sandbox_set);

// A SandboxSet filling to its replicas, as `scale -w` prints it:
//   "my-pool  Scaling  [######....]  4/6 available"
// Scaling until the status has seen the latest spec, holds spec.replicas members and all of
// them are available; Ready after.
struct ScaleStatus {
  std::string name;
  bool done = false;
  int64_t desired = 0;
  int64_t available = 0;

  std::string ProgressLine() const;
};
ScaleStatus SandboxSetScale(const api::Json& sandbox_set);

// okactl's one-line status of a SandboxUpdateOps:
//   "suo-zk7h7  Updating   0/2 updated  1 updating  0 failed"
// with the Progressing condition's reason and message, which say why a Failed one stopped.
struct UpdateOpsStatus {
  std::string name;
  std::string phase;  // Pending when the controller has not written one yet
  int64_t replicas = 0;
  int64_t updated = 0;
  int64_t updating = 0;
  int64_t failed = 0;
  std::string reason;
  std::string message;

  bool failed_phase() const { return phase == "Failed"; }
  std::string Line() const;
};
UpdateOpsStatus UpdateOpsRollout(const api::Json& update_ops);

// Why members are not ready, for a rollout that does not finish (okactl looks at the
// sandbox's status.message first too): "sandbox NAME: PHASE: message" for each member of
// `sandboxes` (a SandboxList's items) whose Ready condition is not True, at most `limit`.
std::vector<std::string> UnreadyMembers(const api::Json& sandboxes, size_t limit);

}  // namespace warren::cli
