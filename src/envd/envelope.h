#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::envd {

// Connect protocol envelopes (streaming RPCs): 1 flag byte, a 4-byte big-endian length, then
// the payload. See e2b-protocol.md §3.3.
inline constexpr uint8_t kEnvelopeMessage = 0x00;
inline constexpr uint8_t kEnvelopeCompressed = 0x01;
inline constexpr uint8_t kEnvelopeEndStream = 0x02;
inline constexpr size_t kEnvelopeHeaderSize = 5;

struct Envelope {
  uint8_t flags = 0;
  std::string payload;
};

std::string EncodeEnvelope(uint8_t flags, std::string_view payload);

// Decodes a request body that must be exactly one uncompressed message envelope (what a
// server-streaming call sends). InvalidArgument naming the defect (short header, length past the
// end, trailing bytes, compressed or end-stream flag); ResourceExhausted when the declared length
// exceeds `max_payload`.
Result<std::string> DecodeSingleEnvelope(std::string_view body, size_t max_payload);

// Incremental decoder for a byte stream of envelopes (a client reading a server stream).
// Not thread-safe.
class EnvelopeReader {
 public:
  explicit EnvelopeReader(size_t max_payload) : max_payload_(max_payload) {}
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  // The next complete envelope, nullopt when more bytes are needed, or an error for an
  // oversized frame.
  Result<std::optional<Envelope>> Next();
  // Bytes received but not yet part of a complete envelope.
  size_t pending() const { return buffer_.size(); }

 private:
  size_t max_payload_;
  std::string buffer_;
};

// The JSON error object of the Connect protocol: {"code":"not_found","message":"..."}.
std::string ConnectErrorJson(const Status& status);
// The end-of-stream payload: "{}" on success, else {"error":{...}}.
std::string EndStreamJson(const Status& status);

}  // namespace warren::envd
