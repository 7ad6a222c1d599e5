#pragma once

// The W3C Trace Context `traceparent` header (https://www.w3.org/TR/trace-context/), version 00:
//
//   traceparent: 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>
//
// Here in base (which depends on nothing of ours) because two layers read it: net's HTTP server
// takes an incoming trace id as the request id (OpenKruise's rule: trace id = request id), and
// the trace module parents its spans on it. Values only, no allocation: parsing happens on
// every request that carries the header, tracing on or off.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace warren::base {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// Where a span sits: its trace, its own id, and whether the trace is sampled (flag bit 0).
struct TraceContext {
  TraceId trace_id{};
  SpanId span_id{};
  uint8_t flags = 0;

  bool sampled() const { return (flags & 1) != 0; }
  bool valid() const;  // neither id is all zeros
  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

// Parses a traceparent header. Accepts version 00 exactly as specified (55 characters,
// lowercase hex, '-' separators) and, as the spec asks of a parser that knows only 00, a
// higher version whose first four fields have the 00 layout (extra "-..." fields ignored).
// Rejects version ff, upper-case hex, wrong lengths and all-zero trace or span ids: nullopt.
// The header comes from the network: it never throws and reads at most what it was given.
std::optional<TraceContext> ParseTraceparent(std::string_view header);

// "00-<trace>-<span>-<flags>".
std::string FormatTraceparent(const TraceContext& context);

// The ids as lowercase hex, as OTLP/JSON and the request id want them.
std::string TraceIdHex(const TraceId& id);
std::string SpanIdHex(const SpanId& id);
// Reads 32 (or 16) lowercase or upper-case hex characters; nullopt on anything else or zeros.
std::optional<TraceId> ParseTraceIdHex(std::string_view hex);

}  // namespace warren::base
