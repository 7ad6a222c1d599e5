#pragma once

#include <string>

#include "obs/metrics.h"

namespace warren::controller::claim {

// The claim path's series: the reference's sandbox_claim_total{namespace,result,lock_type},
// sandbox_claim_duration_seconds{namespace} (its default buckets), sandbox_claim_retries
// {namespace} and sandboxset_sandboxes_claimed_total{namespace,name}; and ours,
// warren_claim_duration_seconds{namespace,lock_type} with millisecond buckets (a pool claim
// takes about a millisecond, below the reference's first bucket). Thread-safe.
class ClaimMetrics {
 public:
  explicit ClaimMetrics(obs::Metrics& metrics = obs::Metrics::Default());
  void Record(const std::string& ns, const std::string& pool, const std::string& result,
              const std::string& lock_type, double seconds, int retries);

 private:
  obs::CounterFamily& total_;
  obs::HistogramFamily& duration_;
  obs::HistogramFamily& fast_duration_;
  obs::HistogramFamily& retries_;
  obs::CounterFamily& pool_claimed_;
};

}  // namespace warren::controller::claim
