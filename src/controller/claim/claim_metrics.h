#pragma once

#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "controller/claim/claimer.h"
#include "obs/metrics.h"

namespace warren::controller::claim {

// The claim path's series, constant label source="e2b" for E2B creates and "k8s" for
// SandboxClaims (ClaimRequest::source):
//   sandbox_claim_total{namespace,result,lock_type}   the reference's; result success|failure,
//                                                     lock_type update|create (none: no pool)
//   sandbox_claim_duration_seconds{namespace}         the reference's, E2B claims only (default
//                                                     buckets); a SandboxClaim's own duration
//                                                     is its controller's (0.01 s buckets)
//   sandbox_claim_retries{namespace}                  the reference's: CAS conflicts lost
//   sandboxset_sandboxes_claimed_total{namespace,name}  pool members handed out (source k8s)
//   warren_claim_duration_seconds{namespace,lock_type}  ours, millisecond buckets: a pool claim
//                                                     takes about a millisecond, below the
//                                                     reference's first bucket
// The claim path is latency-critical, so series are cached per (source, namespace) and per
// pool: a claim records with map lookups by string_view under one mutex and builds label maps
// only the first time a namespace or pool is seen. Thread-safe.
class ClaimMetrics {
 public:
  explicit ClaimMetrics(obs::Metrics& metrics = obs::Metrics::Default());
  void Record(ClaimSource source, std::string_view ns, std::string_view pool, bool ok,
              std::string_view lock_type, double seconds, int retries);

 private:
  static constexpr int kLockTypes = 3;  // update, create, none
  struct Families {
    obs::CounterFamily& total;
    obs::HistogramFamily* duration;  // null for SandboxClaims
    obs::HistogramFamily& retries;
  };
  struct NamespaceSeries {
    prometheus::Counter* total[2][kLockTypes];  // [ok][lock type]
    prometheus::Histogram* duration;            // null for SandboxClaims
    prometheus::Histogram* retries;
    prometheus::Histogram* fast[kLockTypes];
    std::map<std::string, prometheus::Counter*, std::less<>> pool_claimed;
  };
  NamespaceSeries& SeriesFor(ClaimSource source, std::string_view ns);  // mu_ held

  Families families_[2];  // by ClaimSource
  obs::HistogramFamily& fast_duration_;
  obs::CounterFamily& pool_claimed_;
  std::mutex mu_;
  std::map<std::string, NamespaceSeries, std::less<>> series_[2];  // guarded by mu_
};

}  // namespace warren::controller::claim
