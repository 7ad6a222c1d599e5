#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "trace/span_data.h"

namespace warren::trace {

// The body of one OTLP/HTTP export request in the JSON encoding
// (opentelemetry-proto ExportTraceServiceRequest): one resourceSpans with `service.name`, one
// scopeSpans (scope "warren"), the spans. As the OTLP JSON mapping requires, ids are lowercase
// hex (not base64), 64-bit integers (times, intValue) are decimal strings, and enums are
// numbers.
std::string EncodeOtlpJson(const std::vector<SpanData>& spans, std::string_view service_name);

}  // namespace warren::trace
