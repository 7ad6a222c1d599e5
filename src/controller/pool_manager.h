#pragma once

#include <memory>
#include <string_view>

#include "base/status.h"
#include "controller/claim/pool_claimer.h"
#include "controller/pool_hibernator.h"
#include "controller/pool_informers.h"
#include "controller/recycle_controller.h"
#include "controller/sandbox_status_metrics.h"
#include "controller/sandboxclaim_controller.h"
#include "controller/sandboxset_controller.h"
#include "obs/event_recorder.h"

namespace warren::controller {

// Which warm-pool parts a PoolManager runs. With several server replicas the claimer runs on
// every one, and the controllers, which must have one writer, only on the leader.
enum class PoolParts {
  kAll,          // one server: everything over one set of caches
  kClaimer,      // every replica: the claimer (and its janitor)
  kControllers,  // the leader: SandboxSet, SandboxClaim, recycling, idle pauses, status gauges
};

struct PoolManagerOptions {
  PoolParts parts = PoolParts::kAll;
  // For kControllers: the claimer SandboxClaims claim through (the replica's own). Borrowed.
  claim::Claimer* claimer = nullptr;
  SandboxSetControllerOptions sets;
  claim::PoolClaimerOptions claims;
  SandboxClaimControllerOptions sandbox_claims;
  RecycleControllerOptions recycle;
};

// Every warm-pool part of `warren server`, built and started together: the shared informers,
// the SandboxSet controller, the claimer (the E2B create's and SandboxClaim's), the
// SandboxClaim controller and recycling; and the per-Sandbox status gauges
// (sandbox_status_metrics.h), which are a controller's view of every Sandbox as in the reference.
// apps/warren adds it as a server component and hands claimer() to the E2B API.
//
// Borrows the store, the secrets, `connector` and `resetter` (the node agent; either may be null:
// no envd /init, no recycling) — all must outlive it. `on_claimed` (may be empty) sees every
// claimed sandbox before the claim returns: the gateway's route upsert. Start/Stop from one thread;
// claimer() is thread-safe after Start. options.parts picks a share of the parts (PoolParts);
// claimer() and pool_claimer() are for kAll and kClaimer only.
class PoolManager {
 public:
  PoolManager(store::Store& store, const api::SandboxSecrets& secrets,
              claim::SandboxConnector* connector, SandboxResetter* resetter,
              claim::PoolClaimer::RouteHook on_claimed, PoolManagerOptions options = {});
  ~PoolManager();

  Status Start();
  void Stop();
  bool Ready() const { return started_; }

  claim::Claimer& claimer() { return *claimer_; }
  claim::PoolClaimer& pool_claimer() { return *claimer_; }

 private:
  std::unique_ptr<PoolInformers> informers_;
  std::unique_ptr<obs::EventRecorder> events_;
  std::unique_ptr<SandboxSetController> sets_;
  std::unique_ptr<claim::PoolClaimer> claimer_;
  std::unique_ptr<SandboxClaimController> sandbox_claims_;
  std::unique_ptr<RecycleController> recycle_;
  std::unique_ptr<PoolHibernator> hibernator_;
  std::unique_ptr<SandboxStatusMetrics> status_metrics_;
  bool started_ = false;
};

}  // namespace warren::controller
