#include "server/e2b/authed_route.h"

#include "server/auth/route_guard.h"
#include "server/e2b/e2b_metrics.h"
#include "trace/span.h"

namespace warren::server::e2b {

void AddAuthedRoute(net::Router& router, std::string_view method, std::string_view pattern,
                    std::string_view operation, size_t max_body_bytes, AuthedHandler handler) {
  net::RouteOptions options;
  options.blocking = true;
  options.max_body_bytes = max_body_bytes;
  router.Add(
      method, pattern,
      [op = std::string(operation), handler = std::move(handler)](net::Request&& req,
                                                                  net::Responder r) {
        auto started = std::chrono::steady_clock::now();
        net::Response resp = handler(auth::CallerOf(req), req);
        RecordE2bRequest(op, resp.status, std::chrono::steady_clock::now() - started);
        // The request's span (trace/route_spans.h) learns how it ended.
        if (trace::Span* span = trace::CurrentSpan()) {
          span->SetAttribute("http.response.status_code", static_cast<int64_t>(resp.status));
          if (resp.status >= 500) span->SetError(resp.body.substr(0, 512));
        }
        r.Send(std::move(resp));
      },
      options);
}

}  // namespace warren::server::e2b
