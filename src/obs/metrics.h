#pragma once

// Prometheus metrics for every module: one process-wide registry (prometheus-cpp core), families
// registered by name, and the text exposition `warren server` serves at /metrics
// (obs/metrics_route.h).
//
//   auto& claims = obs::Metrics::Default().Counter(
//       "sandbox_claim_total", "Claims by result and lock type.");
//   claims.Add({{"namespace", ns}, {"result", "success"}, {"lock_type", "pool"}}).Increment();
//
// Names follow reference/openkruise-agents.md §5.1 where the reference has one, else
// warren_<subsystem>_<name>_<unit>. Registering a family twice with the same name and constant
// labels returns the first one, so components that are created more than once (tests, restarts
// inside one process) share their series. The same name with other constant labels is another
// family of one exposed metric: the reference gives controller-side series source="k8s" and
// API-side ones source="e2b" (e.g. sandbox_pause_duration_seconds), and Warren runs both in one
// process, so the exposition merges them under one HELP and TYPE.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace warren::obs {

using Labels = std::map<std::string, std::string>;
using CounterFamily = prometheus::Family<prometheus::Counter>;
using GaugeFamily = prometheus::Family<prometheus::Gauge>;
using HistogramFamily = prometheus::Family<prometheus::Histogram>;
using Buckets = std::vector<double>;

// A registry of metric families. Thread-safe (prometheus-cpp's families and metrics are).
// Families live as long as the registry; the default registry lives for the whole process.
class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // The process-wide registry every module registers with and /metrics serves; never destroyed.
  static Metrics& Default();

  // The family called `name`, created on first use. A name already registered as another metric
  // type, or a name or constant label that is not a valid Prometheus identifier, is a bug
  // (CHECK): names are constants in our code, never user input.
  CounterFamily& Counter(std::string_view name, std::string_view help,
                         const Labels& const_labels = {});
  GaugeFamily& Gauge(std::string_view name, std::string_view help, const Labels& const_labels = {});
  // Buckets are given per series, at HistogramFamily::Add(labels, buckets).
  HistogramFamily& Histogram(std::string_view name, std::string_view help,
                             const Labels& const_labels = {});

  // Runs `callback` at the start of every Exposition (e.g. to refresh gauges that are cheap to
  // compute but costly to keep current). Callbacks must be thread-safe and must not call
  // Exposition. Returns an id for RemoveCollectCallback.
  int AddCollectCallback(std::function<void()> callback);
  void RemoveCollectCallback(int id);

  // Families whose series the caller keeps itself and renders at every Exposition, for series
  // that come and go by the thousand (one per sandbox): a prometheus-cpp family's Remove walks
  // all of its series, so keeping those in a family makes each removal O(series). A source
  // gives each of its series every label, constant ones included. Registering under a `key`
  // already held replaces that source (a component made again in one process takes over its
  // series); RemoveFamilySource(id) removes a source only while it still holds its key.
  // Sources must be thread-safe and must not call Exposition.
  using FamilySource = std::function<std::vector<prometheus::MetricFamily>()>;
  int AddFamilySource(std::string key, FamilySource source);
  void RemoveFamilySource(int id);

  // Every metric in the Prometheus text format 0.0.4, sorted by name, each name once (families
  // that differ only in constant labels are merged).
  std::string Exposition() const;

 private:
  // prometheus-cpp refuses one name with two sets of constant labels in a registry, so each set
  // of constant labels gets its own registry; Exposition merges them.
  prometheus::Registry& RegistryFor(std::string_view name, std::string_view type,
                                    const Labels& const_labels);

  struct Registries;
  std::unique_ptr<Registries> registries_;
  struct Callbacks;
  std::unique_ptr<Callbacks> callbacks_;
};

// `count` upper bounds start, start*factor, start*factor^2, ... (Prometheus' ExponentialBuckets).
Buckets ExponentialBuckets(double start, double factor, int count);
// `count` upper bounds start, start+width, ... (Prometheus' LinearBuckets).
Buckets LinearBuckets(double start, double width, int count);

// The reference's buckets (openkruise-agents.md §5.1), so dashboards built for it read ours:
// default durations 0.02 s × 2^n (12 buckets: 20 ms .. ~41 s),
Buckets DefaultDurationBuckets();
// SandboxClaim durations 0.01 s × 2^n (10 buckets),
Buckets ClaimDurationBuckets();
// recycle durations 0.1 s × 2^n (13 buckets),
Buckets RecycleDurationBuckets();
// claim retries 0..10 (linear).
Buckets RetryBuckets();
// Ours, for paths measured in milliseconds (a claim from the pool): 0.25 ms × 2^n (16 buckets:
// 0.25 ms .. ~8 s). The reference's first bucket (10-20 ms) would hold every pool claim.
Buckets FastDurationBuckets();

}  // namespace warren::obs
