#pragma once

#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>

#include "base/result.h"
#include "os/spawn.h"

namespace warren::os {

// Collects every child of this process: the ones we spawned (their wait status goes to the
// callback given at spawn) and any orphan the kernel re-parents to us (we are pid 1 in a
// sandbox, or a child subreaper), which are reaped and forgotten so no zombie piles up.
//
// waitpid(-1) is process-wide state, so there is exactly one reaper per process: Get() starts
// its thread on first use and it lives until exit. Nothing else in the process may wait for
// children. Thread-safe.
class ChildReaper {
 public:
  // Receives the raw wait status (WIFEXITED/WIFSIGNALED apply), on the reaper thread.
  using ExitCallback = std::function<void(int wait_status)>;

  static ChildReaper& Get();

  // Spawns under the reaper's lock and registers `on_exit` before the reaper can see the child,
  // so even a child that exits at once is reported. A child that failed to exec is reaped
  // silently.
  Result<SpawnedChild> Spawn(const SpawnOptions& options, ExitCallback on_exit);

  // Children reaped that nobody had registered (orphans adopted from finished processes).
  uint64_t orphans_reaped() const { return orphans_reaped_.load(); }

 private:
  ChildReaper();
  void Run();

  std::mutex mu_;
  std::condition_variable spawned_;      // wakes the thread when it had no children
  std::map<pid_t, ExitCallback> watch_;  // guarded by mu_
  uint64_t spawn_count_ = 0;             // guarded by mu_
  std::atomic<uint64_t> orphans_reaped_{0};
};

}  // namespace warren::os
