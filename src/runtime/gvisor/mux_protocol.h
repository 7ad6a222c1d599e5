#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

// The framed protocol between the host's half of a gVisor sandbox's channel (the shim,
// mux_shim.h) and its in-sandbox half (the init, mux_init.h), carried over the container's
// stdin (host → sandbox) and stdout (sandbox → host). gVisor 20221219 has no network path from
// the host with --network=none, and those pipes are what a checkpoint/restore re-attaches, so
// every connection to a port inside the sandbox is a stream of this protocol.
//
// A frame is a 9-byte header — type (1 byte), stream id (4, big endian), payload length (4, big
// endian) — and at most kMaxPayload bytes. Streams are opened by the host only. Each direction
// of a stream has a window of kWindow bytes: a side sends DATA only while the peer has granted
// credit, and grants it back with WINDOW as it writes the bytes out, so one slow connection
// never makes the other side buffer without bound or stall the channel for the others.
//
// Depends on nothing but the C++ library: the init half is linked into a small static binary.
namespace warren::runtime::gvisor::mux {

enum class FrameType : uint8_t {
  kOpen = 1,        // host → init: connect to 127.0.0.1:<port> (payload: u16 port)
  kOpenOk = 2,      // init → host: connected
  kOpenFail = 3,    // init → host: payload u32 errno
  kData = 4,        // bytes of the stream
  kWindow = 5,      // payload u32: this many more bytes may be sent
  kEof = 6,         // the sender sends no more on this stream (a half close)
  kReset = 7,       // the stream is gone, both ways; stream 0: every stream is
  kReady = 8,       // init → host, stream 0: the command was exec'd (payload u32 pid)
  kExecFailed = 9,  // init → host, stream 0: the command could not be run (payload: text)
  kExit = 10,       // init → host, stream 0: the command ended (payload i32 code, i32 signal)
};

inline constexpr size_t kHeaderSize = 9;
inline constexpr uint32_t kMaxPayload = 64 * 1024;
inline constexpr uint32_t kWindow = 256 * 1024;

struct Frame {
  FrameType type = FrameType::kData;
  uint32_t stream = 0;
  std::string payload;
};

// Appends one encoded frame to `out`. `payload` must be at most kMaxPayload bytes.
void AppendFrame(std::string& out, FrameType type, uint32_t stream, std::string_view payload);
std::string U32(uint32_t v);
uint32_t ReadU32(std::string_view bytes);  // the first 4 bytes, big endian; 0 when shorter

// Splits a byte stream into frames. Untrusted input: an unknown type or an oversized length
// fails the decoder for good (the channel is then unusable). Not thread-safe.
class FrameDecoder {
 public:
  enum class Next { kFrame, kNeedMore, kError };
  void Feed(const char* data, size_t n) { buffer_.append(data, n); }
  Next Pop(Frame& out);
  const std::string& error() const { return error_; }

 private:
  std::string buffer_;
  size_t offset_ = 0;
  std::string error_;
};

}  // namespace warren::runtime::gvisor::mux
