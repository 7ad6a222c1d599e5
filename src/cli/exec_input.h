#pragma once

#include <atomic>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>

#include "base/unique_fd.h"
#include "cli/envd_process.h"
#include "cli/signal_pipe.h"

namespace warren::cli {

// The input side of `warren exec -i/-t`, on its own thread: local stdin to the process
// (SendInput; at EOF CloseStdin, or ^D for a PTY), SIGWINCH to a PTY resize (Update), and
// SIGINT/SIGTERM/SIGHUP to killing the process — the way a hangup ends a terminal session — and
// to Terminated() so the output stream stops. It waits for the process's pid before it sends
// anything, so it can be started before the process is.
//
// The signals must be blocked in every other thread (BlockSignals) so that only this thread's
// poll sees them. Thread-safe: SetPid/Stop/Terminated from any thread; the destructor Stop()s
// and joins.
class InputPump {
 public:
  struct Options {
    bool forward_stdin = false;  // -i
    bool pty = false;            // -t
    int stdin_fd = 0;
    int terminal_fd = 0;  // where the window size is read on SIGWINCH
  };
  InputPump(EnvdProcess& process, SignalPipe& signals, Options options);
  ~InputPump();
  InputPump(const InputPump&) = delete;
  InputPump& operator=(const InputPump&) = delete;

  // Runs the thread. Errnos of the wake pipe are reported here.
  Status Start();
  void SetPid(uint32_t pid);
  void Stop();
  // The terminating signal that came, if any.
  std::optional<int> Terminated() const;

 private:
  void Loop();
  void Wake();

  EnvdProcess& process_;
  SignalPipe& signals_;
  const Options options_;
  base::UniqueFd wake_read_;
  base::UniqueFd wake_write_;
  std::mutex mu_;
  std::optional<uint32_t> pid_;  // guarded by mu_
  bool stop_ = false;            // guarded by mu_
  std::atomic<int> terminated_{0};
  std::thread thread_;
};

// The signals the pump handles, blocked in the calling thread (and so in threads it starts
// later) until destroyed.
class BlockSignals {
 public:
  BlockSignals();
  ~BlockSignals();
  BlockSignals(const BlockSignals&) = delete;
  BlockSignals& operator=(const BlockSignals&) = delete;

 private:
  sigset_t previous_{};
};

inline constexpr int kPumpSignals[] = {SIGWINCH, SIGINT, SIGTERM, SIGHUP};

}  // namespace warren::cli
