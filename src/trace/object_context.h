#pragma once

#include <optional>

#include "api/object.h"
#include "base/traceparent.h"

namespace warren::trace {

// The trace context carried on an object, as OpenKruise Agents carries it (reference §5.2): the
// API request that last changed the object writes its traceparent into the
// agents.kruise.io/trace-context annotation, and whoever works on the object afterwards (the
// node agent's reconcile) parents its spans on it, so that work shows as siblings of the
// request's own steps.

// Writes the current span's traceparent (trace/span.h) into the annotation; does nothing when
// no span records on this thread, so with tracing off objects are written as before.
void CarryContext(api::Object& object);

// The context `object` carries; nullopt when it carries none or a malformed one (the annotation
// is as untrusted as the rest of an object a tenant may write).
std::optional<base::TraceContext> CarriedContext(const api::Object& object);

}  // namespace warren::trace
