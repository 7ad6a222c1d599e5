#include "trace/object_context.h"

#include "api/types/labels.h"
#include "trace/span.h"

namespace warren::trace {

void CarryContext(api::Object& object) {
  Span* current = CurrentSpan();
  if (current == nullptr) return;
  object.metadata.annotations[api::annotations::kTraceContext] = current->traceparent();
}

std::optional<base::TraceContext> CarriedContext(const api::Object& object) {
  auto carried = object.metadata.annotations.find(api::annotations::kTraceContext);
  if (carried == object.metadata.annotations.end()) return std::nullopt;
  return base::ParseTraceparent(carried->second);
}

}  // namespace warren::trace
