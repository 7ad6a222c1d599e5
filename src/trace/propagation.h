#pragma once

#include <optional>

#include "base/traceparent.h"
#include "net/http.h"

namespace warren::trace {

// Adds `traceparent` for the current span (trace/span.h) to an outgoing request's headers, so
// the callee can parent its work on it. Does nothing when no span records on this thread.
void InjectTraceparent(net::Headers& headers);

// The caller's context from an incoming request's `traceparent`; nullopt when absent or
// malformed (a malformed header starts a new trace, as the W3C spec asks).
std::optional<base::TraceContext> ExtractTraceparent(const net::Headers& headers);

}  // namespace warren::trace
