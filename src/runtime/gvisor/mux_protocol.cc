#include "runtime/gvisor/mux_protocol.h"

namespace warren::runtime::gvisor::mux {

std::string U32(uint32_t v) {
  std::string s(4, '\0');
  s[0] = static_cast<char>(v >> 24);
  s[1] = static_cast<char>(v >> 16);
  s[2] = static_cast<char>(v >> 8);
  s[3] = static_cast<char>(v);
  return s;
}

uint32_t ReadU32(std::string_view b) {
  if (b.size() < 4) return 0;
  auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

void AppendFrame(std::string& out, FrameType type, uint32_t stream, std::string_view payload) {
  out.push_back(static_cast<char>(type));
  out += U32(stream);
  out += U32(static_cast<uint32_t>(payload.size()));
  out.append(payload.data(), payload.size());
}

FrameDecoder::Next FrameDecoder::Pop(Frame& out) {
  if (!error_.empty()) return Next::kError;
  std::string_view rest(buffer_);
  rest.remove_prefix(offset_);
  if (rest.size() < kHeaderSize) {
    // Compact only when a whole frame has been consumed, so the buffer stays small.
    buffer_.erase(0, offset_);
    offset_ = 0;
    return Next::kNeedMore;
  }
  auto type = static_cast<uint8_t>(rest[0]);
  if (type < static_cast<uint8_t>(FrameType::kOpen) ||
      type > static_cast<uint8_t>(FrameType::kExit)) {
    error_ = "unknown frame type " + std::to_string(type);
    return Next::kError;
  }
  uint32_t length = ReadU32(rest.substr(5));
  if (length > kMaxPayload) {
    error_ = "frame of " + std::to_string(length) + " bytes exceeds the limit";
    return Next::kError;
  }
  if (rest.size() < kHeaderSize + length) {
    buffer_.erase(0, offset_);
    offset_ = 0;
    return Next::kNeedMore;
  }
  out.type = static_cast<FrameType>(type);
  out.stream = ReadU32(rest.substr(1));
  out.payload.assign(rest.substr(kHeaderSize, length));
  offset_ += kHeaderSize + length;
  return Next::kFrame;
}

}  // namespace warren::runtime::gvisor::mux
