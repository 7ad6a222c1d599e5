#include "server/e2b/e2b_metrics.h"

#include <string>

#include "obs/metrics.h"
#include "obs/sandbox_metric_help.h"

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

const obs::Labels kSource = {{"source", "e2b"}};

}  // namespace

E2bOperationMetrics& E2bOperations() {
  static E2bOperationMetrics* metrics = new E2bOperationMetrics{
      // lives as long as the registry
      .pause = obs::OperationMetrics({.duration = "sandbox_pause_duration_seconds",
                                      .duration_help = obs::help::kPauseDuration,
                                      .total = "sandbox_pause_responses",
                                      .total_help = "E2B pause requests, by result.",
                                      .const_labels = kSource}),
      .resume = obs::OperationMetrics(
          {.duration = "sandbox_resume_duration_seconds",
           .duration_help = obs::help::kResumeDuration,
           .total = "sandbox_resume_responses",
           .total_help = "E2B resumes (resume, connect, auto-resume), by result.",
           .const_labels = kSource}),
      .delete_ = obs::OperationMetrics(
          {.duration = "sandbox_delete_duration_seconds",
           .duration_help = "Time the E2B API takes to kill a sandbox (its teardown is the "
                            "node's: sandbox_deletion_duration_seconds).",
           .total = "sandbox_delete_responses",
           .total_help = "E2B kills, by result.",
           .const_labels = kSource}),
      .recycle = obs::OperationMetrics(
          {.duration = "sandbox_recycle_duration_seconds",
           .duration_help = obs::help::kRecycleDuration,
           .total = "sandbox_recycle_responses",
           .total_help = "E2B kills that returned a claimed sandbox to its pool, by result.",
           .buckets = obs::RecycleDurationBuckets(),
           .const_labels = kSource}),
      .clone = obs::OperationMetrics(
          {.duration = "sandbox_clone_duration_seconds",
           .duration_help = "Time to fork a sandbox: its capture and every fork's create.",
           .total = "sandbox_clone_total",
           .total_help = "E2B forks, by result (failure: the capture or any fork failed).",
           .const_labels = kSource}),
      .snapshot = obs::OperationMetrics(
          {.duration = "sandbox_snapshot_duration_seconds",
           .duration_help = "Time to snapshot a sandbox (capture and template).",
           .total = "sandbox_snapshot_total",
           .total_help = "E2B snapshots, by result.",
           .const_labels = kSource}),
      .claim_creation =
          obs::OperationMetrics({.total = "sandbox_claim_creation_responses",
                                 .total_help = "E2B creates from a SandboxSet (claims), by result.",
                                 .const_labels = kSource}),
  };
  return *metrics;
}

void RecordE2bRequest(std::string_view operation, int http_status,
                      std::chrono::steady_clock::duration elapsed) {
  Families& f = Get();
  std::string op(operation);
  f.requests.Add({{"operation", op}, {"code", std::to_string(http_status)}}).Increment();
  f.duration.Add({{"operation", op}}, obs::DefaultDurationBuckets())
      .Observe(std::chrono::duration<double>(elapsed).count());
}

}  // namespace warren::server::e2b
