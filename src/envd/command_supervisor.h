#pragma once

#include <sys/types.h>

#include <condition_variable>
#include <memory>
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
// The output is copied by a thread of its own, which may outlast the command and the
// supervisor: the LogRing must outlive it (WaitOutputDrained), or the process must end.
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
  // Shared with the reaper's exit callback and the output thread, both of which may still be
  // touching it (a notify after the unlock, an exit reaped after the output drained) when the
  // supervisor itself is gone.
  struct State {
    std::mutex mu;
    std::condition_variable exited_cv;
    pid_t pid = -1;                  // guarded by mu
    bool running = false;            // guarded by mu
    std::optional<int> wait_status;  // guarded by mu
    bool output_open = false;        // guarded by mu; signalled on exited_cv as well
  };

  LogRing& log_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace warren::envd
