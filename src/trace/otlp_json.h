#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/span_data.h"

namespace warren::trace {

// The body of one OTLP/HTTP export request in the JSON encoding
// (opentelemetry-proto ExportTraceServiceRequest): one resourceSpans per service (`service_name`
// for spans whose SpanData::service is empty, then one for each other service, in order of first
// appearance), each with one scopeSpans (scope "warren") holding its spans. As the OTLP JSON
// mapping requires, ids are lowercase hex (not base64), 64-bit integers (times, intValue) are
// decimal strings, and enums are numbers.
std::string EncodeOtlpJson(const std::vector<SpanData>& spans, std::string_view service_name);

// One span as an OTLP/JSON span object on one line (no newline in it): how envd writes the
// spans it records for the node agent to collect (trace/span_log.h). SpanData::service is not
// part of it.
std::string EncodeOtlpSpan(const SpanData& span);

// Reads a line EncodeOtlpSpan wrote. The line comes from a file a sandbox can write, so it is
// hostile input: anything malformed, out of range or oversized (ids that are not 16/8 bytes of
// hex or are zero, an end before the start, more than kMaxDecodedAttributes attributes, strings
// past kMaxDecodedString bytes, a name past kMaxDecodedName) gives nullopt, and no field is taken
// on trust beyond its type and bounds. Never throws.
inline constexpr size_t kMaxDecodedName = 256;
inline constexpr size_t kMaxDecodedString = 1024;
inline constexpr size_t kMaxDecodedAttributes = 32;
std::optional<SpanData> DecodeOtlpSpan(std::string_view line);

}  // namespace warren::trace
