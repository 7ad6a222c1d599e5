#pragma once

#include <csignal>
#include <initializer_list>
#include <memory>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::cli {

// Turns signals into bytes on a pipe (the self-pipe trick), so a poll() loop handles SIGWINCH,
// SIGINT and SIGTERM as ordinary events, outside signal context, and the code that owns the
// terminal unwinds normally. Installing replaces the signals' handlers; destroying puts the
// previous ones back. At most one instance per process (the handler writes to a process-wide
// fd); its methods are for the thread that polls it.
class SignalPipe {
 public:
  static Result<std::unique_ptr<SignalPipe>> Install(std::initializer_list<int> signals);
  ~SignalPipe();
  SignalPipe(const SignalPipe&) = delete;
  SignalPipe& operator=(const SignalPipe&) = delete;

  // Readable when a signal came.
  int fd() const { return read_.get(); }
  // The signals received since the last call, in order (empty if none).
  std::vector<int> Drain();

 private:
  SignalPipe() = default;
  base::UniqueFd read_;
  base::UniqueFd write_;
  std::vector<std::pair<int, struct sigaction>> previous_;
};

}  // namespace warren::cli
