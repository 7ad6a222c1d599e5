#include "envd/envelope.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace warren::envd {

std::string EncodeEnvelope(uint8_t flags, std::string_view payload) {
  std::string out;
  out.reserve(kEnvelopeHeaderSize + payload.size());
  const auto n = static_cast<uint32_t>(payload.size());
  out.push_back(static_cast<char>(flags));
  out.push_back(static_cast<char>((n >> 24) & 0xff));
  out.push_back(static_cast<char>((n >> 16) & 0xff));
  out.push_back(static_cast<char>((n >> 8) & 0xff));
  out.push_back(static_cast<char>(n & 0xff));
  out.append(payload);
  return out;
}

namespace {

uint32_t ReadLength(std::string_view header) {
  auto b = [&](int i) { return static_cast<uint32_t>(static_cast<uint8_t>(header[i])); };
  return (b(1) << 24) | (b(2) << 16) | (b(3) << 8) | b(4);
}

}  // namespace

Result<std::string> DecodeSingleEnvelope(std::string_view body, size_t max_payload) {
  if (body.size() < kEnvelopeHeaderSize) {
    return InvalidArgumentError(fmt::format(
        "malformed envelope: {} bytes is shorter than the 5-byte envelope header", body.size()));
  }
  const auto flags = static_cast<uint8_t>(body[0]);
  const uint32_t len = ReadLength(body);
  if (len > max_payload) {
    return ResourceExhaustedError(
        fmt::format("envelope of {} bytes exceeds the limit of {} bytes", len, max_payload));
  }
  if (flags & kEnvelopeCompressed) {
    return InvalidArgumentError("compressed envelopes are not supported (no compression)");
  }
  if (flags != kEnvelopeMessage) {
    return InvalidArgumentError(fmt::format("unexpected envelope flags 0x{:02x}", flags));
  }
  if (body.size() - kEnvelopeHeaderSize < len) {
    return InvalidArgumentError(
        fmt::format("malformed envelope: declares {} bytes but only {} follow", len,
                    body.size() - kEnvelopeHeaderSize));
  }
  if (body.size() - kEnvelopeHeaderSize > len) {
    return InvalidArgumentError("malformed request: more than one envelope in a unary stream");
  }
  return std::string(body.substr(kEnvelopeHeaderSize));
}

Result<std::optional<Envelope>> EnvelopeReader::Next() {
  if (buffer_.size() < kEnvelopeHeaderSize) return std::optional<Envelope>();
  const uint32_t len = ReadLength(buffer_);
  if (len > max_payload_) {
    return ResourceExhaustedError(
        fmt::format("envelope of {} bytes exceeds the limit of {} bytes", len, max_payload_));
  }
  if (buffer_.size() - kEnvelopeHeaderSize < len) return std::optional<Envelope>();
  Envelope e;
  e.flags = static_cast<uint8_t>(buffer_[0]);
  e.payload = buffer_.substr(kEnvelopeHeaderSize, len);
  buffer_.erase(0, kEnvelopeHeaderSize + len);
  return std::optional<Envelope>(std::move(e));
}

std::string ConnectErrorJson(const Status& status) {
  nlohmann::json j = {{"code", std::string(ConnectCodeName(status.code()))},
                      {"message", status.message()}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string EndStreamJson(const Status& status) {
  if (status.ok()) return "{}";
  return fmt::format("{{\"error\":{}}}", ConnectErrorJson(status));
}

}  // namespace warren::envd
