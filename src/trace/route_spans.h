#pragma once

#include <string_view>

#include "net/router.h"

namespace warren::trace {

// Puts a root span around every route's handler but health checks, /metrics and the dashboard's
// files (net::Router::WrapAll): "<prefix> <method> <route pattern>" ("HTTP POST /sandboxes" in
// `warren server`, "envd POST /process.Process/Start" in envd), a child of the request's
// `traceparent` when it has a valid one, else the first span of a trace whose id is the
// request id (net makes the two equal, http_server.cc). The handler runs with it as its
// thread's current span, so the steps it times (trace::Span) are its children.
//
// The span covers the handler's call: the whole request for blocking routes (every E2B and
// resource route answers before returning); for a handler that answers later from another
// thread, only its synchronous part.
//
// Call after the router is complete and only when tracing is on (trace::Enabled()): when off,
// routes stay unwrapped and requests pay nothing.
void TraceRoutes(net::Router& router, std::string_view prefix = "HTTP");

}  // namespace warren::trace
