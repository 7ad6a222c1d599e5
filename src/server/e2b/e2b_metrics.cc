#include "server/e2b/e2b_metrics.h"

#include <string>

#include "obs/metrics.h"

namespace warren::server::e2b {
namespace {

struct Families {
  obs::CounterFamily& requests = obs::Metrics::Default().Counter(
      "warren_e2b_requests_total", "E2B API requests answered, by operation and HTTP status.");
  obs::HistogramFamily& duration = obs::Metrics::Default().Histogram(
      "warren_e2b_request_duration_seconds", "Time to answer an E2B API request, by operation.");
};

Families& Get() {
  static Families* families = new Families();  // lives as long as the default registry
  return *families;
}

}  // namespace

void RecordE2bRequest(std::string_view operation, int http_status,
                      std::chrono::steady_clock::duration elapsed) {
  Families& f = Get();
  std::string op(operation);
  f.requests.Add({{"operation", op}, {"code", std::to_string(http_status)}}).Increment();
  f.duration.Add({{"operation", op}}, obs::DefaultDurationBuckets())
      .Observe(std::chrono::duration<double>(elapsed).count());
}

}  // namespace warren::server::e2b
