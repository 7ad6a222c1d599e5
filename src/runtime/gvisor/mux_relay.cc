#include "runtime/gvisor/mux_relay.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace warren::runtime::gvisor::mux {
namespace {

// Above this much unsent to the channel, sockets are not read: the channel is the bottleneck.
constexpr size_t kChannelHighWater = 1 << 20;
// Above this much, the channel itself is not read either: what the peer sends makes window
// grants to queue, and a peer that does not read its end must not grow this side's memory.
constexpr size_t kChannelHardCap = 4 << 20;

}  // namespace

void Relay::Send(FrameType type, uint32_t stream, std::string_view payload) {
  if (channel_out_ < 0) return;  // nobody reads the channel any more
  AppendFrame(to_channel_, type, stream, payload);
}

void Relay::Reset(uint32_t id, bool tell_peer) {
  if (streams_.erase(id) > 0 && tell_peer) Send(FrameType::kReset, id);
}

void Relay::StopWriting() {
  // The peer reads no more; what it still says is read to its end (the init's exit report),
  // and the channel's EOF closes it.
  channel_out_ = -1;
  to_channel_.clear();
}

void Relay::CloseChannel() {
  if (channel_in_ < 0 && channel_out_ < 0) return;
  channel_in_ = -1;
  channel_out_ = -1;
  to_channel_.clear();
  streams_.clear();
  OnChannelClosed();
}

void Relay::ReadChannel() {
  char buf[kMaxPayload];
  ssize_t n = read(channel_in_, buf, sizeof buf);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
  if (n <= 0) {
    CloseChannel();
    return;
  }
  decoder_.Feed(buf, static_cast<size_t>(n));
  Frame frame;
  for (;;) {
    FrameDecoder::Next next = decoder_.Pop(frame);
    if (next == FrameDecoder::Next::kNeedMore) return;
    if (next == FrameDecoder::Next::kError) {
      std::string line = "warren-gvisor-init: channel: " + decoder_.error() + "\n";
      [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
      CloseChannel();
      return;
    }
    HandleFrame(frame);
    if (channel_in_ < 0) return;
  }
}

void Relay::WriteChannel() {
  while (!to_channel_.empty()) {
    ssize_t n = write(channel_out_, to_channel_.data(), to_channel_.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) {
      StopWriting();
      return;
    }
    to_channel_.erase(0, static_cast<size_t>(n));
  }
}

void Relay::FlushChannel(int timeout_ms) {
  while (!to_channel_.empty() && channel_out_ >= 0) {
    pollfd p = {channel_out_, POLLOUT, 0};
    int r = poll(&p, 1, timeout_ms);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return;
    WriteChannel();
  }
}

void Relay::HandleFrame(const Frame& f) {
  switch (f.type) {
    case FrameType::kData: {
      auto it = streams_.find(f.stream);
      if (it == streams_.end()) return;  // reset meanwhile
      Stream& s = it->second;
      if (s.to_socket.size() - s.exempt + f.payload.size() > kWindow || s.peer_eof) {
        Reset(f.stream, true);  // beyond the window it granted: a broken peer
        return;
      }
      s.to_socket += f.payload;
      return;
    }
    case FrameType::kWindow: {
      auto it = streams_.find(f.stream);
      if (it == streams_.end()) return;
      uint64_t credit = uint64_t{it->second.send_credit} + ReadU32(f.payload);
      it->second.send_credit = static_cast<uint32_t>(std::min<uint64_t>(credit, kWindow));
      return;
    }
    case FrameType::kEof: {
      auto it = streams_.find(f.stream);
      if (it != streams_.end()) it->second.peer_eof = true;
      return;
    }
    case FrameType::kReset:
      // Stream 0 is the channel itself: a new peer (a shim after a restore) knows none of the
      // streams of the one before.
      if (f.stream == 0) {
        streams_.clear();
      } else {
        Reset(f.stream, false);
      }
      return;
    default:
      OnControlFrame(f);
  }
}

void Relay::OnStreamEvents(uint32_t id, short revents) {
  auto it = streams_.find(id);
  if (it == streams_.end()) return;
  Stream& s = it->second;
  if (s.connecting) {
    if (revents & (POLLOUT | POLLERR | POLLHUP)) OnConnected(id, s);
    return;
  }
  if ((revents & POLLOUT) && !s.to_socket.empty()) {
    ssize_t n = write(s.fd.get(), s.to_socket.data(), s.to_socket.size());
    if (n < 0 && errno != EAGAIN && errno != EINTR) {
      Reset(id, true);
      return;
    }
    if (n > 0) {
      size_t written = static_cast<size_t>(n);
      size_t exempt = std::min(s.exempt, written);
      s.exempt -= exempt;
      s.unacked += static_cast<uint32_t>(written - exempt);
      s.to_socket.erase(0, written);
      if (s.unacked > 0 && (s.unacked >= kWindow / 4 || s.to_socket.empty())) {
        Send(FrameType::kWindow, id, U32(s.unacked));
        s.unacked = 0;
      }
    }
  }
  if (s.reading && !s.read_eof && (revents & (POLLIN | POLLHUP | POLLERR)) && s.send_credit > 0) {
    char buf[kMaxPayload];
    size_t want = std::min<size_t>(sizeof buf, s.send_credit);
    ssize_t n = read(s.fd.get(), buf, want);
    if (n > 0) {
      Send(FrameType::kData, id, std::string_view(buf, static_cast<size_t>(n)));
      s.send_credit -= static_cast<uint32_t>(n);
    } else if (n == 0) {
      s.read_eof = true;
      Send(FrameType::kEof, id);
    } else if (errno != EAGAIN && errno != EINTR) {
      Reset(id, true);
      return;
    }
  }
  if (s.to_socket.empty()) {
    if (s.close_after_flush) {
      Reset(id, false);
      return;
    }
    if (s.peer_eof && !s.shut_wr) {
      shutdown(s.fd.get(), SHUT_WR);
      s.shut_wr = true;
    }
    if (s.shut_wr && s.read_eof) Reset(id, false);  // done both ways
  }
}

void Relay::Run() {
  std::vector<pollfd> fds;
  std::vector<uint32_t> ids;
  while (!stop_) {
    fds.clear();
    ids.clear();
    // An fd with nothing to wait for is left out (-1): poll reports POLLHUP and POLLERR even
    // when no event was asked, and a hung-up socket or pipe would turn this loop into a spin
    // (a stream waiting for window or for its peer to open, a client gone while the server
    // inside keeps its end open).
    const bool channel_full = to_channel_.size() >= kChannelHardCap;
    fds.push_back({channel_in_ >= 0 && !channel_full ? channel_in_ : -1, POLLIN, 0});
    fds.push_back({!to_channel_.empty() ? channel_out_ : -1, POLLOUT, 0});
    const bool channel_busy = to_channel_.size() >= kChannelHighWater;
    for (auto& [id, s] : streams_) {
      short events = 0;
      if (s.connecting) {
        events = POLLOUT;
      } else {
        if (s.reading && !s.read_eof && s.send_credit > 0 && !channel_busy) events |= POLLIN;
        if (!s.to_socket.empty()) events |= POLLOUT;
      }
      fds.push_back({events != 0 ? s.fd.get() : -1, events, 0});
      ids.push_back(id);
    }
    const size_t extra_at = fds.size();
    AddPollFds(fds);
    int r = poll(fds.data(), fds.size(), -1);
    if (r < 0) {
      if (errno == EINTR) continue;
      return;
    }
    // A stream's bookkeeping may have changed without an event (a frame arrived): streams
    // whose state allows progress are visited after the channel, below.
    if (channel_out_ >= 0 && (fds[1].revents & (POLLERR | POLLHUP))) {
      StopWriting();
    } else if (channel_out_ >= 0 && (fds[1].revents & POLLOUT)) {
      WriteChannel();
    }
    if (channel_in_ >= 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) ReadChannel();
    for (size_t i = 0; i < ids.size(); ++i) {
      short revents = fds[2 + i].revents;
      auto it = streams_.find(ids[i]);
      if (it == streams_.end()) continue;
      // Bytes that arrived from the channel this round are written at once when the socket
      // is known writable; streams that finished both ways are closed.
      if (revents == 0 && (it->second.to_socket.empty() || it->second.connecting) &&
          !(it->second.peer_eof && !it->second.shut_wr) && !it->second.close_after_flush) {
        continue;
      }
      if (revents == 0 && !it->second.connecting) revents = POLLOUT;
      OnStreamEvents(ids[i], revents);
    }
    OnPolled(fds.data() + extra_at, fds.size() - extra_at);
    if (channel_out_ >= 0 && !to_channel_.empty()) WriteChannel();
  }
}

}  // namespace warren::runtime::gvisor::mux
