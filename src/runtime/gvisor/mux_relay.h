#pragma once

#include <poll.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "runtime/gvisor/mux_protocol.h"

namespace warren::runtime::gvisor::mux {

// What both halves of the channel share (mux_protocol.h): the stream table, each stream's
// window in both directions, half closes, and a poll loop over the channel and the streams'
// sockets. The halves add their own fds and frames (a listener on the host; the command and
// its signals inside the sandbox) through the hooks.
//
// Single-threaded: everything runs on the thread that calls Run. Owns the streams' sockets;
// borrows the channel fds, which must be non-blocking.
class Relay {
 public:
  Relay(int channel_in, int channel_out) : channel_in_(channel_in), channel_out_(channel_out) {}
  virtual ~Relay() = default;
  Relay(const Relay&) = delete;
  Relay& operator=(const Relay&) = delete;

  // Polls until Stop (a hook calls it) and returns.
  void Run();
  void Stop() { stop_ = true; }
  // Writes what is queued for the channel, waiting up to `timeout_ms` for it to drain (the
  // init's last words before it exits).
  void FlushChannel(int timeout_ms);
  size_t stream_count() const { return streams_.size(); }

 protected:
  struct Stream {
    base::UniqueFd fd;
    bool connecting = false;  // a connect in flight (init): poll for POLLOUT
    bool reading = true;      // read the socket (false until the peer has connected it)
    std::string to_socket;    // from the peer, not yet written
    size_t exempt = 0;        // leading bytes of to_socket outside the window (a reply line)
    uint32_t send_credit = kWindow;
    uint32_t unacked = 0;   // written to the socket and not yet granted back
    bool read_eof = false;  // the socket said EOF (kEof sent)
    bool peer_eof = false;  // the peer sent kEof
    bool shut_wr = false;   // we shut the socket's write side after peer_eof
    bool close_after_flush = false;
  };

  void Send(FrameType type, uint32_t stream, std::string_view payload = {});
  // Forgets the stream (closing its socket); tells the peer with kReset when asked.
  void Reset(uint32_t id, bool tell_peer);

  // Frames other than a stream's data, window, eof and reset.
  virtual void OnControlFrame(const Frame& frame) = 0;
  // A connecting stream's socket is writable or failed (init).
  virtual void OnConnected(uint32_t id, Stream& stream) {
    (void)id;
    (void)stream;
  }
  // The channel is gone (EOF, an error, or a peer that broke the protocol).
  virtual void OnChannelClosed() {}
  // Extra fds to poll; OnPolled receives them back, in the same order, with revents.
  virtual void AddPollFds(std::vector<pollfd>& fds) { (void)fds; }
  virtual void OnPolled(const pollfd* fds, size_t n) {
    (void)fds;
    (void)n;
  }

  std::map<uint32_t, Stream> streams_;

 private:
  void ReadChannel();
  void WriteChannel();
  void HandleFrame(const Frame& frame);
  void OnStreamEvents(uint32_t id, short revents);
  void CloseChannel();
  void StopWriting();

  int channel_in_;
  int channel_out_;
  FrameDecoder decoder_;
  std::string to_channel_;
  bool stop_ = false;
};

}  // namespace warren::runtime::gvisor::mux
