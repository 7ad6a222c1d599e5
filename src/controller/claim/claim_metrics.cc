#include "controller/claim/claim_metrics.h"

namespace warren::controller::claim {

ClaimMetrics::ClaimMetrics(obs::Metrics& m)
    : total_(m.Counter("sandbox_claim_total", "Sandbox claims by result and lock type.")),
      duration_(m.Histogram("sandbox_claim_duration_seconds", "Time to claim a sandbox.")),
      fast_duration_(m.Histogram("warren_claim_duration_seconds",
                                 "Time to claim a sandbox, in millisecond buckets.")),
      retries_(m.Histogram("sandbox_claim_retries",
                           "Compare-and-swap conflicts a claim lost before it won.")),
      pool_claimed_(m.Counter("sandboxset_sandboxes_claimed_total",
                              "Pool members handed out by claims.", {{"source", "k8s"}})) {}

void ClaimMetrics::Record(const std::string& ns, const std::string& pool, const std::string& result,
                          const std::string& lock_type, double seconds, int retries) {
  total_.Add({{"namespace", ns}, {"result", result}, {"lock_type", lock_type}}).Increment();
  duration_.Add({{"namespace", ns}}, obs::DefaultDurationBuckets()).Observe(seconds);
  fast_duration_.Add({{"namespace", ns}, {"lock_type", lock_type}}, obs::FastDurationBuckets())
      .Observe(seconds);
  retries_.Add({{"namespace", ns}}, obs::RetryBuckets()).Observe(retries);
  if (result == "success" && lock_type == "update") {
    pool_claimed_.Add({{"namespace", ns}, {"name", pool}}).Increment();
  }
}

}  // namespace warren::controller::claim
