#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "obs/operation_metrics.h"

namespace warren::server::e2b {

// Records one answered E2B API request in the process's metrics registry (obs::Metrics):
//   warren_e2b_requests_total{operation,code}            counter
//   warren_e2b_request_duration_seconds{operation}       histogram (the reference's default
//                                                        buckets, 20 ms × 2^n)
// `operation` is a fixed name per route ("create", "list", "pause", ...). Thread-safe.
void RecordE2bRequest(std::string_view operation, int http_status,
                      std::chrono::steady_clock::duration elapsed);

// The reference's sandbox-manager series (openkruise-agents.md §5.1, constant label
// source="e2b"), each {namespace} with a {namespace,result} counter, result success|failure:
//   pause     sandbox_pause_duration_seconds    sandbox_pause_responses
//   resume    sandbox_resume_duration_seconds   sandbox_resume_responses (resume, connect of a
//                                                paused sandbox, the gateway's auto-resume)
//   delete    sandbox_delete_duration_seconds   sandbox_delete_responses
//   recycle   sandbox_recycle_duration_seconds  sandbox_recycle_responses (a kill that returns
//                                                a claimed member to its pool)
//   clone     sandbox_clone_duration_seconds    sandbox_clone_total (fork: the capture and
//                                                every fork's create)
//   snapshot  sandbox_snapshot_duration_seconds sandbox_snapshot_total
//   claim_creation                              sandbox_claim_creation_responses (an E2B create
//                                                from a SandboxSet)
// Operations are counted once the caller may see the sandbox (a 404 for another team's id is
// not an operation on it). Process-wide, like the registry; thread-safe.
struct E2bOperationMetrics {
  obs::OperationMetrics pause, resume, delete_, recycle, clone, snapshot, claim_creation;
};
E2bOperationMetrics& E2bOperations();

// Records an operation when it goes out of scope: a failure unless Succeeded() was called.
// Not thread-safe (one per call).
class OperationRecorder {
 public:
  // `namespace_` must outlive the recorder (it is the caller's object's); nothing is copied, so
  // the claim path pays no allocation for it.
  OperationRecorder(obs::OperationMetrics& metrics, std::string_view namespace_)
      : metrics_(&metrics), namespace_(namespace_) {}
  ~OperationRecorder() {
    metrics_->Record(
        namespace_, ok_,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count());
  }
  OperationRecorder(const OperationRecorder&) = delete;
  OperationRecorder& operator=(const OperationRecorder&) = delete;

  void Succeeded() { ok_ = true; }
  // The operation turned out to be another (a kill that recycled).
  void Is(obs::OperationMetrics& metrics) { metrics_ = &metrics; }

 private:
  obs::OperationMetrics* metrics_;
  std::string_view namespace_;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool ok_ = false;
};

}  // namespace warren::server::e2b
