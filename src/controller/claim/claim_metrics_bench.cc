// What recording one claim costs: ClaimMetrics' cached series beside the reference of looking
// the series up by a label map at every claim (what it did before).

#include <benchmark/benchmark.h>

#include "controller/claim/claim_metrics.h"

namespace warren::controller::claim {
namespace {

void BM_RecordCached(benchmark::State& state) {
  obs::Metrics registry;
  ClaimMetrics metrics(registry);
  const std::string ns = "team-alpha", pool = "python-3-12";
  for (auto _ : state) {
    metrics.Record(ClaimSource::kE2b, ns, pool, true, lock_type::kUpdate, 0.001, 0);
  }
}
BENCHMARK(BM_RecordCached);

void BM_RecordByLabelMaps(benchmark::State& state) {
  obs::Metrics registry;
  auto& total = registry.Counter("sandbox_claim_total", "h");
  auto& duration = registry.Histogram("sandbox_claim_duration_seconds", "h");
  auto& fast = registry.Histogram("warren_claim_duration_seconds", "h");
  auto& retries = registry.Histogram("sandbox_claim_retries", "h");
  auto& claimed = registry.Counter("sandboxset_sandboxes_claimed_total", "h");
  const std::string ns = "team-alpha", pool = "python-3-12", lock = lock_type::kUpdate;
  for (auto _ : state) {
    total.Add({{"namespace", ns}, {"result", "success"}, {"lock_type", lock}}).Increment();
    duration.Add({{"namespace", ns}}, obs::DefaultDurationBuckets()).Observe(0.001);
    fast.Add({{"namespace", ns}, {"lock_type", lock}}, obs::FastDurationBuckets()).Observe(0.001);
    retries.Add({{"namespace", ns}}, obs::RetryBuckets()).Observe(0);
    claimed.Add({{"namespace", ns}, {"name", pool}}).Increment();
  }
}
BENCHMARK(BM_RecordByLabelMaps);

}  // namespace
}  // namespace warren::controller::claim
