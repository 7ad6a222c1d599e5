#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "envd/log_ring.h"
#include "os/spawn.h"

namespace warren::envd {

// Runs the template's own command (given after `--` on envd's command line) as a child of envd,
// with stdout and stderr captured into a LogRing (GET /logs). It is started once; its exit is
// logged and kept (envd keeps serving: the sandbox is still useful to an agent). Thread-safe.
// The output is copied by a thread of its own, which may outlast the command: the supervisor
// and the LogRing must outlive it (WaitOutputDrained), or the process must end.
class CommandSupervisor {
 public:
  explicit CommandSupervisor(LogRing& log) : log_(log) {}

  Status Start(os::SpawnOptions options);
  // Sends `signal` to the command's process group; no-op when it is not running.
  void Signal(int signal);
  // Waits until the command has exited or `timeout` passes; true when it has exited (or never
  // ran).
  bool WaitExited(std::chrono::milliseconds timeout);
  std::optional<int> wait_status() const;
  // Waits until every byte the command wrote is in the log: its stdout and stderr reached EOF.
  // The command's exit alone does not say so, since the copying thread may be behind, and a
  // process it left running may hold them open. True when drained (or never started), false
  // once `timeout` passes.
  bool WaitOutputDrained(std::chrono::milliseconds timeout);

 private:
  LogRing& log_;
  mutable std::mutex mu_;
  std::condition_variable exited_cv_;
  pid_t pid_ = -1;                  // guarded by mu_
  bool running_ = false;            // guarded by mu_
  std::optional<int> wait_status_;  // guarded by mu_
  bool output_open_ = false;        // guarded by mu_; signalled on exited_cv_ as well
};

}  // namespace warren::envd
