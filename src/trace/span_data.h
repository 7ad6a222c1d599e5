#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/traceparent.h"

namespace warren::trace {

// An attribute's value: OTLP's stringValue, intValue and boolValue.
using AttributeValue = std::variant<std::string, int64_t, bool>;

// OTLP's SpanKind: how the span relates to its neighbours across a process boundary.
enum class SpanKind { kInternal = 1, kServer = 2, kClient = 3 };

// A finished span as the exporter sends it. Plain data; no behaviour.
struct SpanData {
  std::string name;
  base::TraceContext context;  // its trace, its own id, the sampled flag
  base::SpanId parent_span_id{};
  bool has_parent = false;
  SpanKind kind = SpanKind::kInternal;
  int64_t start_unix_nanos = 0;
  int64_t end_unix_nanos = 0;
  std::vector<std::pair<std::string, AttributeValue>> attributes;
  bool error = false;  // OTLP status code 2 (ERROR) with `status_message`; else UNSET
  std::string status_message;
  // The process that recorded it, as OTLP's resource `service.name`: empty for this process
  // (the exporter's own name); set for spans another process recorded and this one forwards
  // (envd's, collected by the node agent).
  std::string service;
};

// Where finished spans go (the OTLP exporter; a collecting sink in tests). Submit is called on
// whatever thread ends a span: implementations are thread-safe and must not block.
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void Submit(SpanData span) = 0;
};

}  // namespace warren::trace
