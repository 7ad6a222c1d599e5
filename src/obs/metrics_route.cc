#include "obs/metrics_route.h"

namespace warren::obs {

void AddMetricsRoute(net::Router& router, Metrics& metrics) {
  router.Add("GET", "/metrics", [&metrics](net::Request&&, net::Responder responder) {
    net::Response response = net::Response::Text(200, metrics.Exposition());
    response.headers.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    responder.Send(std::move(response));
  });
}

}  // namespace warren::obs
