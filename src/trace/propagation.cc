#include "trace/propagation.h"

#include "trace/span.h"

namespace warren::trace {

void InjectTraceparent(net::Headers& headers) {
  Span* current = CurrentSpan();
  if (current == nullptr) return;
  headers.Set("traceparent", current->traceparent());
}

std::optional<base::TraceContext> ExtractTraceparent(const net::Headers& headers) {
  auto value = headers.Get("traceparent");
  if (!value) return std::nullopt;
  return base::ParseTraceparent(*value);
}

}  // namespace warren::trace
