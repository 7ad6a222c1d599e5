#include "trace/route_spans.h"

#include <fmt/format.h>

#include <string>

#include "trace/propagation.h"
#include "trace/span.h"

namespace warren::trace {
namespace {

// Probes and scrapes come every few seconds and say nothing about what users did.
bool Untraced(std::string_view pattern) {
  return pattern == "/health" || pattern == "/healthz" || pattern == "/readyz" ||
         pattern == "/metrics" || pattern == "/ui" || pattern.starts_with("/ui/");
}

}  // namespace

void TraceRoutes(net::Router& router, std::string_view prefix) {
  router.WrapAll([prefix = std::string(prefix)](std::string_view method, std::string_view pattern,
                                                net::RouteOptions&,
                                                net::Handler inner) -> net::Handler {
    if (Untraced(pattern)) return inner;
    std::string name = pattern.empty() ? fmt::format("{} {}", prefix, method)
                                       : fmt::format("{} {} {}", prefix, method, pattern);
    return [name = std::move(name), route = std::string(pattern), inner = std::move(inner)](
               net::Request&& req, net::Responder r) {
      Span span(name,
                Span::Root{ExtractTraceparent(req.headers), base::ParseTraceIdHex(req.request_id)});
      if (span.recording()) {
        span.SetAttribute("http.request.method", req.method);
        if (!route.empty()) span.SetAttribute("http.route", route);
        span.SetAttribute("warren.request_id", req.request_id);
      }
      inner(std::move(req), std::move(r));
    };
  });
}

}  // namespace warren::trace
