#include "server/e2b/authed_route.h"

#include "base/log.h"
#include "server/e2b/e2b_metrics.h"
#include "server/e2b/errors.h"

namespace warren::server::e2b {

void AddAuthedRoute(net::Router& router, std::string_view method, std::string_view pattern,
                    std::string_view operation, std::shared_ptr<auth::KeyStore> keys,
                    size_t max_body_bytes, AuthedHandler handler) {
  net::RouteOptions options;
  options.blocking = true;
  options.max_body_bytes = max_body_bytes;
  router.Add(
      method, pattern,
      [op = std::string(operation), keys = std::move(keys), handler = std::move(handler)](
          net::Request&& req, net::Responder r) {
        auto started = std::chrono::steady_clock::now();
        auto key = req.headers.Get("X-API-Key");
        auto who = keys->Authenticate(key ? *key : std::string_view());
        net::Response resp;
        if (who.ok()) {
          resp = handler(*who, req);
        } else {
          if (who.status().code() != StatusCode::kUnauthenticated) {
            base::Logger("e2b")->error("api key check failed error={}", who.status().ToString());
          }
          resp = ErrorResponse(who.status());
        }
        RecordE2bRequest(op, resp.status, std::chrono::steady_clock::now() - started);
        r.Send(std::move(resp));
      },
      options);
}

}  // namespace warren::server::e2b
