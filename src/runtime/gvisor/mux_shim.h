#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "runtime/gvisor/mux_relay.h"

namespace warren::runtime::gvisor::mux {

// The stream id a new dial gets: `next` (odd), or the first odd id after it that no open stream
// holds. Ids are odd and never 0 (which means every stream); after 2^31 dials they start over
// at 1, and a long-lived stream must not be taken over by a new one.
uint32_t FreeStreamId(uint32_t next, const std::function<bool(uint32_t)>& in_use);

// The host's half of the channel: serves the sandbox's Unix socket (`mux.sock` in its state
// directory). A client writes one request line and reads one reply line:
//   "DIAL <port>\n" → "OK\n" followed by the stream's bytes both ways, or "ERR <errno>\n";
//   "READY\n"       → "OK <pid>\n" once the command was exec'd, "ERR exec <why>\n" when it
//                     could not be, "ERR exited\n" when the sandbox ended first.
// It writes the command's exit ("<code> <signal>\n") to `exit_file` when the init reports it,
// and stops when the channel closes (the sandbox is gone). Single-threaded, as Relay.
class ShimRelay final : public Relay {
 public:
  // `listener`: a listening, non-blocking Unix socket (borrowed).
  ShimRelay(int channel_in, int channel_out, int listener, std::string exit_file)
      : Relay(channel_in, channel_out), listener_(listener), exit_file_(std::move(exit_file)) {
    // After a restore the init still holds the streams of the shim before: they are gone.
    Send(FrameType::kReset, 0);
  }

 private:
  struct Pending {
    base::UniqueFd fd;
    std::string line;
  };
  void OnControlFrame(const Frame& frame) override;
  void OnChannelClosed() override;
  void AddPollFds(std::vector<pollfd>& fds) override;
  void OnPolled(const pollfd* fds, size_t n) override;
  void Request(base::UniqueFd fd, const std::string& line);
  void AnswerReady();

  int listener_;
  std::string exit_file_;
  bool exit_written_ = false;     // the first kExit only
  std::vector<Pending> pending_;  // clients whose request line is incomplete
  std::vector<base::UniqueFd> ready_waiters_;
  std::string ready_;  // the READY answer once known
  uint32_t next_stream_ = 1;
};

// `warren-gvisor-init shim --dir <sandbox dir> --log <file> -- <runsc ... create|restore ...>`:
// run by the runtime, outlives it. Leaves the terminal's session, makes the channel's pipes,
// binds <dir>/mux.sock, runs the runsc command with the pipes as the container's stdin and
// stdout and <file> as its stderr, says "ok\n" (or "fail <status>\n", then exits) on its own
// stdout once that command has exited, then relays until the sandbox is gone. Its own
// diagnostics go to <dir>/shim.log.
int RunShim(const std::string& dir, const std::string& log, const std::vector<char*>& runsc);

}  // namespace warren::runtime::gvisor::mux
