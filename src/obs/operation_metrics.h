#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "obs/metrics.h"

namespace warren::obs {

// What an OperationMetrics exports: a duration histogram {namespace} when `duration` is not
// empty and a counter {namespace,result} when `total` is not empty, with result "success" or
// "failure" (the reference's sandbox_pause_duration_seconds + sandbox_pause_total pattern). Both
// carry `const_labels` (source="k8s" or "e2b").
struct OperationMetricsSpec {
  std::string_view duration, duration_help;
  std::string_view total, total_help;  // empty: no counter
  Buckets buckets = DefaultDurationBuckets();
  Labels const_labels;
};

// One operation's series, cached per namespace so recording finds them with one lookup by
// string_view under a mutex and allocates only the first time a namespace is seen. Namespaces
// are few and long-lived, so their series are kept. Durations are observed for successes only:
// a refused or failed attempt would pull the quantiles towards zero; failures show in the
// counter. Thread-safe.
class OperationMetrics {
 public:
  explicit OperationMetrics(const OperationMetricsSpec& spec,
                            Metrics& metrics = Metrics::Default());
  OperationMetrics(const OperationMetrics&) = delete;
  OperationMetrics& operator=(const OperationMetrics&) = delete;

  void Record(std::string_view namespace_, bool ok, double seconds);

 private:
  struct Series {
    prometheus::Histogram* duration;  // null without a histogram
    prometheus::Counter* success;     // null without a counter
    prometheus::Counter* failure;
  };
  Series& SeriesFor(std::string_view namespace_);  // mu_ held

  HistogramFamily* duration_;
  CounterFamily* total_;
  const Buckets buckets_;
  std::mutex mu_;
  std::map<std::string, Series, std::less<>> series_;  // guarded by mu_
};

}  // namespace warren::obs
