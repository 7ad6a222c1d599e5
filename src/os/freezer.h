#pragma once

#include <chrono>
#include <string>

#include "base/result.h"

namespace warren::os {

// Freezing a cgroup's processes (pause) and thawing them (resume), for both hierarchies:
// v1 writes FROZEN/THAWED to freezer.state, v2 writes 1/0 to cgroup.freeze. Either way the
// kernel freezes asynchronously, so we poll until the state is reached — with a short sleep
// between reads, because a busy poller on a small machine starves the very tasks that must
// reach the freezer (measured: 880 ms instead of 6 ms on 2 cores). DeadlineExceeded when the
// state is not reached in `timeout`. Thread-compatible (no state of its own).

Status SetFrozenV1(const std::string& freezer_dir, bool frozen, std::chrono::milliseconds timeout);
Status SetFrozenV2(const std::string& cgroup_dir, bool frozen, std::chrono::milliseconds timeout);

// Whether the group is fully frozen now (v1: freezer.state reads FROZEN; v2: "frozen 1" in
// cgroup.events).
Result<bool> IsFrozenV1(const std::string& freezer_dir);
Result<bool> IsFrozenV2(const std::string& cgroup_dir);

}  // namespace warren::os
