#pragma once

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "controller/claim/claimer.h"
#include "controller/informer.h"
#include "controller/own_write_fence.h"
#include "controller/pool_informers.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"
#include "obs/metrics.h"
#include "obs/operation_metrics.h"

namespace warren::controller {

struct SandboxClaimControllerOptions {
  int workers = 2;
  int initial_batch_size = 5;              // claims in flight per reconcile: 5, 10, 20, ...
  int max_batch_size = 50;                 // claims per reconcile at most (the reference's)
  std::chrono::seconds no_stock_retry{2};  // requeue when the pool is empty and creating is off
  std::chrono::milliseconds write_visible_timeout{2000};
};

// Reconciles SandboxClaim objects (reference §1.3, §2.4): claims spec.replicas sandboxes from
// the SandboxSet spec.templateName through the claim library, each carrying spec.labels,
// spec.annotations, the label agents.kruise.io/claim-name, an owner reference to the claim,
// spec.shutdownTime, and spec.envVars passed to envd /init (unless skipInitRuntime).
//   - status: phase Claiming → Completed, claimedReplicas, claimStartTime, completionTime,
//     conditions Completed and TimedOut (claimTimeout passed first; what was claimed stays);
//   - the sandboxes a claim holds are counted from the cache (label and owner), so a restart in
//     the middle never claims twice; and never while the cache is behind the claim's own last
//     claims (it waits for them rather than claim again);
//   - ttlAfterCompleted (default 60m, negative = never) deletes the claim object only: its
//     sandboxes are orphaned (owner reference removed), not deleted.
//
// Borrows the informers, the claimer and the recorder (may be null). Thread-safe; Start/Stop
// from one thread.
class SandboxClaimController {
 public:
  SandboxClaimController(PoolInformers& informers, claim::Claimer& claimer,
                         obs::EventRecorder* events, SandboxClaimControllerOptions options = {},
                         base::Clock& clock = base::RealClock());
  ~SandboxClaimController();

  Status Start();  // lists and watches claims; the pool informers must be started
  void Stop();

  // One reconcile on the caller's thread; returns how long until it wants to run again
  // (zero = only on change).
  Result<std::chrono::milliseconds> Reconcile(std::string_view namespace_, std::string_view name);

 private:
  std::vector<ObjectPtr> ClaimedBy(const api::Object& claim) const;
  void Worker();

  PoolInformers& informers_;
  store::Store& store_;
  claim::Claimer& claimer_;
  obs::EventRecorder* events_;
  SandboxClaimControllerOptions options_;
  base::Clock& clock_;
  std::unique_ptr<Informer> claims_;
  WorkQueue queue_;
  OwnWriteFence own_writes_;  // per claim key: its claims the sandbox cache has not shown
  obs::CounterFamily& claims_total_;
  obs::CounterFamily& expired_total_;
  // sandbox_claim_duration_seconds{source="k8s"}: creation to Completed, fully claimed only.
  obs::OperationMetrics duration_;
  std::vector<std::thread> workers_;
  bool started_ = false;
};

}  // namespace warren::controller
