#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gateway/metrics.h"
#include "obs/metrics.h"

namespace warren::gateway {

// Publishes the gateway's MetricSamples in an obs::Metrics registry (served at /metrics): at
// every scrape a collect callback reads the samples, sets gauges, advances counters by what they
// grew since the last scrape, and removes series that are gone (a sandbox without open relays).
// Owns its callback registration; the destructor removes it, after which `samples` is never
// called again. Thread-safe.
class MetricsExport {
 public:
  MetricsExport(obs::Metrics& metrics, std::function<std::vector<MetricSample>()> samples);
  ~MetricsExport();
  MetricsExport(const MetricsExport&) = delete;
  MetricsExport& operator=(const MetricsExport&) = delete;

  // What a scrape does; public so tests can run it without serialising.
  void Collect();

 private:
  using SeriesKey = std::pair<std::string, obs::Labels>;
  struct Series {
    prometheus::Counter* counter = nullptr;
    prometheus::Gauge* gauge = nullptr;
    double last = 0;  // counters: the sample value already added
  };

  obs::Metrics& metrics_;
  std::function<std::vector<MetricSample>()> samples_;
  int callback_id_ = -1;
  std::mutex mu_;
  std::map<SeriesKey, Series> series_;  // guarded by mu_
};

}  // namespace warren::gateway
