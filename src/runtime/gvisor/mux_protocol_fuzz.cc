// The shim parses what a sandbox writes to its stdout: any bytes must decode or fail cleanly.
#include <cstddef>
#include <cstdint>

#include "runtime/gvisor/mux_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using warren::runtime::gvisor::mux::Frame;
  using warren::runtime::gvisor::mux::FrameDecoder;
  FrameDecoder d;
  size_t half = size / 2;
  d.Feed(reinterpret_cast<const char*>(data), half);
  Frame f;
  while (d.Pop(f) == FrameDecoder::Next::kFrame) {
  }
  d.Feed(reinterpret_cast<const char*>(data) + half, size - half);
  while (d.Pop(f) == FrameDecoder::Next::kFrame) {
  }
  return 0;
}
