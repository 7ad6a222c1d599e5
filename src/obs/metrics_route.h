#pragma once

#include "net/router.h"
#include "obs/metrics.h"

namespace warren::obs {

// Serves `metrics` at GET /metrics in the Prometheus text format (what a Prometheus server
// scrapes). The handler runs inline: collecting is in-memory and takes microseconds.
void AddMetricsRoute(net::Router& router, Metrics& metrics = Metrics::Default());

}  // namespace warren::obs
