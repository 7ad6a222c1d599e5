#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gvisor/mux_relay.h"

namespace warren::runtime::gvisor::mux {

// The in-sandbox half of the channel: connects each stream the host opens to 127.0.0.1:<port>
// on the sandbox's own loopback, and (when given a command) runs it, reports it exec'd or
// could not be, forwards the signals pid 1 receives to it, reaps every orphan (it is pid 1),
// and reports its exit before returning. Single-threaded, as Relay.
class InitRelay final : public Relay {
 public:
  // `signal_fd`: a signalfd for SIGCHLD and the forwarded signals, or -1 (tests: no command).
  InitRelay(int channel_in, int channel_out, pid_t command, int signal_fd)
      : Relay(channel_in, channel_out), command_(command), signal_fd_(signal_fd) {}

  // A frame of stream 0 about the command (kReady, kExecFailed), queued for the host.
  void Announce(FrameType type, const std::string& payload) { Send(type, 0, payload); }
  // How the command ended, once Run has returned because it did (a wait status).
  int wait_status() const { return wait_status_; }

 private:
  void OnControlFrame(const Frame& frame) override;
  void OnConnected(uint32_t id, Stream& stream) override;
  void AddPollFds(std::vector<pollfd>& fds) override;
  void OnPolled(const pollfd* fds, size_t n) override;
  void ReapChildren();

  pid_t command_;
  int signal_fd_;
  int wait_status_ = 0;
};

// `warren-gvisor-init init -- <command...>`: the container's pid 1. The channel is stdin and
// stdout; the command gets /dev/null as stdin and this process's stderr (the sandbox's log) as
// stdout and stderr, without the variables named in `unset` (runsc adds HOME when the spec has
// none, and envd must then choose each user's own). Returns the process's exit code (the
// command's, or 128 + its signal).
int RunInit(const std::vector<char*>& command, const std::vector<std::string>& unset);

}  // namespace warren::runtime::gvisor::mux
