#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// How a process ended, as waitid(2) reports it.
struct ProcessExit {
  int exit_code = -1;  // valid when signal == 0
  int signal = 0;      // the terminating signal, 0 when the process exited normally
};

// A process identified by a pidfd, so a recycled pid is never mistaken for it. Owns the fd;
// move-only; the methods are const and may be called from several threads at once.
class Pidfd {
 public:
  Pidfd() = default;
  Pidfd(pid_t pid, base::UniqueFd fd) : pid_(pid), fd_(std::move(fd)) {}

  // pidfd_open(2). NotFound when no such process exists.
  static Result<Pidfd> Open(pid_t pid);

  pid_t pid() const { return pid_; }
  int fd() const { return fd_.get(); }
  bool valid() const { return fd_.valid(); }

  // pidfd_send_signal(2). Signalling a process that already exited is not an error.
  Status SendSignal(int sig) const;

  // True once the process has exited (it may still be a zombie).
  bool HasExited() const;

  // Blocks until the process exits or `timeout` passes (DeadlineExceeded).
  Status WaitForExit(std::chrono::milliseconds timeout) const;

  // Reaps the process if it is a child of this process and has exited: the exit, or nullopt
  // while it still runs. FailedPrecondition when it is not our child (adopted after a
  // restart: its parent is init or a subreaper, which reaps it).
  Result<std::optional<ProcessExit>> TryReap() const;

 private:
  pid_t pid_ = -1;
  base::UniqueFd fd_;
};

// The start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat). With
// the pid it names a process uniquely for the life of the machine.
Result<uint64_t> ProcessStartTime(pid_t pid);
// The same from the text of a stat file; the command name may hold spaces and parentheses.
Result<uint64_t> ParseStatStartTime(std::string_view stat);

// /proc/sys/kernel/random/boot_id: differs after every reboot.
Result<std::string> BootId();

}  // namespace warren::os
