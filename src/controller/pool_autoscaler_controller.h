#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/autoscale_policy.h"
#include "controller/informer.h"
#include "controller/pool_demand.h"
#include "obs/event_recorder.h"
#include "store/store.h"

namespace warren::controller {

struct PoolAutoscalerControllerOptions {
  // Upstream's sampling: the set's available members every 5 s, averaged over 30 s. Decisions
  // are made at every sample.
  std::chrono::seconds sample_interval{5};
  std::chrono::seconds observation_window{30};
};

// Runs PoolAutoscalers (openkruise-agents.md §1.10, §2.8): every sample interval, for each
// autoscaler, samples its SandboxSet's status (availableReplicas, replicas), asks
// autoscale::Decide, and when the answer differs writes the set's spec.replicas (a merge patch
// with the cached resourceVersion as a precondition, as the scale subresource would) and
// records an Event (SuccessfulRescale, with the reason: a cron window's name, the watermark,
// the predicted demand). Status: observedGeneration, currentReplicas, desiredReplicas,
// lastScaleTime, suspended, appliedCronPolicies, currentCapacity.available, prediction and the
// conditions ScalingActive, AbleToScale, ScalingLimited.
//
// One autoscaler per set: when several in a namespace target the same set, the oldest (then
// the first by name) acts and the others report ScalingActive=False/ConflictingAutoscaler.
// A target is looked up in the autoscaler's own namespace only.
//
// Claim history for the predictive policy comes from the pool's Sandboxes (label
// agents.kruise.io/sandbox-pool): a member turning agents.kruise.io/sandbox-claimed=true is a
// claim — the E2B create's claimer and SandboxClaims both write it, and a sandbox created
// already claimed because the pool was empty is a claim that found none. A member turning
// Available gives a refill time (creation → now). History lives in memory: after a restart the
// predictive policy relearns (claimed sandboxes still present are not replayed).
//
// Time comes from the injected clock; the worker sleeps sample_interval of real time between
// passes, and Tick() runs a pass at once (tests move a FakeClock and call it). Thread-safe;
// borrows the store, the clock and the recorder (may be null).
class PoolAutoscalerController {
 public:
  PoolAutoscalerController(store::Store& store, obs::EventRecorder* events,
                           base::Clock& clock = base::RealClock(),
                           PoolAutoscalerControllerOptions options = {});
  ~PoolAutoscalerController();

  // Starts the caches and the worker; `run_worker` false leaves passes to Tick (tests).
  Status Start(bool run_worker = true);
  void Stop();

  // One pass over every PoolAutoscaler, at clock.Now().
  void Tick();
  // Waits until the caches hold the newest version of every object they follow (a test's own
  // writes); false on timeout.
  bool WaitForCaches(std::chrono::milliseconds timeout);

 private:
  struct PoolState {
    PoolDemand demand;
    int32_t available = 0;    // Available members in the cache
    int32_t cold_streak = 0;  // claims that found none since one found a member
  };

  void OnSandbox(const Informer::Change& change);
  void Run();
  Status Reconcile(const api::Object& autoscaler, base::WallTime now);
  // The autoscaler of `ns` that acts on set `name`: the oldest, then the first by name.
  std::string OwnerOf(const std::string& ns, const std::string& set) const;

  store::Store& store_;
  obs::EventRecorder* events_;
  base::Clock& clock_;
  const PoolAutoscalerControllerOptions options_;
  Informer autoscalers_;
  Informer sets_;
  Informer sandboxes_;

  std::mutex mu_;
  std::map<std::string, PoolState> pools_;                      // "ns/pool"; guarded by mu_
  std::map<std::string, autoscale::CapacitySampler> samplers_;  // autoscaler uid; guarded by mu_

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
  std::thread worker_;
};

}  // namespace warren::controller
