#include "base/traceparent.h"

#include <algorithm>

namespace warren::base {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// -1 unless `c` is a hex digit; upper case only when `upper_ok` (traceparent is lowercase).
int HexValue(char c, bool upper_ok) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (upper_ok && c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <size_t N>
bool DecodeHex(std::string_view hex, std::array<uint8_t, N>& out, bool upper_ok) {
  if (hex.size() != 2 * N) return false;
  for (size_t i = 0; i < N; ++i) {
    int hi = HexValue(hex[2 * i], upper_ok);
    int lo = HexValue(hex[2 * i + 1], upper_ok);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

template <size_t N>
bool AllZero(const std::array<uint8_t, N>& a) {
  return std::all_of(a.begin(), a.end(), [](uint8_t b) { return b == 0; });
}

template <size_t N>
void AppendHex(std::string& out, const std::array<uint8_t, N>& a) {
  for (uint8_t b : a) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
}

}  // namespace

bool TraceContext::valid() const { return !AllZero(trace_id) && !AllZero(span_id); }

std::optional<TraceContext> ParseTraceparent(std::string_view header) {
  // version(2) '-' trace(32) '-' span(16) '-' flags(2) = 55.
  constexpr size_t kLength = 55;
  if (header.size() < kLength) return std::nullopt;
  std::array<uint8_t, 1> version{};
  if (!DecodeHex(header.substr(0, 2), version, false) || version[0] == 0xff) return std::nullopt;
  if (header[2] != '-' || header[35] != '-' || header[52] != '-') return std::nullopt;
  // Version 00 is exactly 55 characters; a later version may append fields after a '-'.
  if (version[0] == 0 ? header.size() != kLength
                      : header.size() > kLength && header[kLength] != '-') {
    return std::nullopt;
  }
  TraceContext c;
  std::array<uint8_t, 1> flags{};
  if (!DecodeHex(header.substr(3, 32), c.trace_id, false) ||
      !DecodeHex(header.substr(36, 16), c.span_id, false) ||
      !DecodeHex(header.substr(53, 2), flags, false)) {
    return std::nullopt;
  }
  c.flags = flags[0];
  if (!c.valid()) return std::nullopt;
  return c;
}

std::string FormatTraceparent(const TraceContext& context) {
  std::string out;
  out.reserve(55);
  out.append("00-");
  AppendHex(out, context.trace_id);
  out.push_back('-');
  AppendHex(out, context.span_id);
  out.push_back('-');
  AppendHex(out, std::array<uint8_t, 1>{context.flags});
  return out;
}

std::string TraceIdHex(const TraceId& id) {
  std::string out;
  out.reserve(32);
  AppendHex(out, id);
  return out;
}

std::string SpanIdHex(const SpanId& id) {
  std::string out;
  out.reserve(16);
  AppendHex(out, id);
  return out;
}

std::optional<TraceId> ParseTraceIdHex(std::string_view hex) {
  TraceId id{};
  if (!DecodeHex(hex, id, true) || AllZero(id)) return std::nullopt;
  return id;
}

}  // namespace warren::base
