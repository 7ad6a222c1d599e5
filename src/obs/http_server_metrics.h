#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

#include "net/http_server.h"
#include "obs/metrics.h"

namespace warren::obs {

// Publishes one HTTP listener's connection counters (net::ConnectionStats) in a Metrics
// registry, labelled listener="<name>" ("api", "gateway"):
//   warren_http_connections_open                      gauge
//   warren_http_connections_accepted_total            counter
//   warren_http_connections_rejected_total{reason}    counter: listener_full, address_full
//   warren_http_connections_timed_out_total{phase}    counter: head, body, idle, write, relay
//   warren_http_blocking_queued                       gauge: handlers waiting for a thread
// At each scrape a collect callback reads `stats` and advances the counters by what they grew.
// Owns its callback registration: after the destructor `stats` is never called again, and the
// gauges are removed. Thread-safe.
class HttpServerMetrics {
 public:
  HttpServerMetrics(Metrics& metrics, std::string listener,
                    std::function<net::ConnectionStats()> stats);
  ~HttpServerMetrics();
  HttpServerMetrics(const HttpServerMetrics&) = delete;
  HttpServerMetrics& operator=(const HttpServerMetrics&) = delete;

  // What a scrape does; public so tests can run it without serialising.
  void Collect();

 private:
  void Advance(prometheus::Counter& counter, uint64_t value);

  Metrics& metrics_;
  const std::string listener_;
  std::function<net::ConnectionStats()> stats_;
  int callback_id_ = -1;
  prometheus::Gauge* open_;
  prometheus::Gauge* queued_;
  std::mutex mu_;
  std::map<prometheus::Counter*, uint64_t> last_;  // guarded by mu_: the value already added
};

}  // namespace warren::obs
