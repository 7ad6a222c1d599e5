#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "controller/claim/sandbox_connector.h"
#include "controller/pool_informers.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"
#include "obs/metrics.h"
#include "store/store.h"

namespace warren::controller {

// What recycling needs from the node that runs a sandbox (implemented by the node agent):
// a real reset. Every process of the sandbox is stopped, the writable layer is discarded (the
// filesystem is the image again), pid 1 (envd) starts afresh — so envd's token, env vars and
// processes are gone — and the call returns once envd answers again. While it runs the node
// reports phase Recycling (no traffic is routed). Blocking; thread-safe.
class SandboxResetter {
 public:
  virtual ~SandboxResetter() = default;
  virtual Status Reset(const api::Object& sandbox, std::chrono::milliseconds timeout) = 0;
};

struct RecycleControllerOptions {
  int workers = 2;
  std::chrono::milliseconds timeout{60000};  // the reference's --recycle-timeout
  // With agents.kruise.io/cleanup-retain-on-failure, a failed recycle keeps the sandbox this
  // long (spec.shutdownTime) instead of deleting it (the reference's 5 m).
  std::chrono::milliseconds failure_shutdown_grace{300000};
};

// Returns claimed sandboxes to their pool (reference §2.2 "Recycle"). A sandbox is recycled
// when it carries agents.kruise.io/cleanup=true and recycling is on for it
// (agents.kruise.io/cleanup-enabled=true on the sandbox or on its SandboxSet). Deleting a
// claimed sandbox through the E2B API asks for this instead of deleting (see
// DeleteOrRecycle). Steps, each safe to repeat after a crash:
//   1. check: the pool still exists and is not being deleted, the sandbox is at the pool's
//      current revision, it is not failed or being deleted — else it is deleted;
//   2. one write: the previous user's token and /init body are replaced by a fresh secret pool
//      token (the sandbox id stays the same and its previous user knows it: with a token nobody
//      has, the gateway keeps them out from here on), and a recycling marker;
//   3. the node's reset (SandboxResetter): processes restarted, writable layer discarded, envd
//      fresh; then /init with the pool token;
//   4. one write back into the pool (owner reference, sandbox-claimed=false, the claim's labels,
//      annotations and timers removed), then status.recycledCount + 1.
// Any failure (or the timeout) deletes the sandbox, or with cleanup-retain-on-failure gives it a
// shutdownTime. Metrics: sandbox_recycle_total{namespace,result},
// sandbox_recycle_duration_seconds{namespace}.
//
// Borrows everything; `resetter` may be null (no node agent: recycling then fails, which
// deletes). Thread-safe; Start/Stop from one thread.
class RecycleController {
 public:
  RecycleController(PoolInformers& informers, SandboxResetter* resetter,
                    claim::SandboxConnector* connector, obs::EventRecorder* events,
                    RecycleControllerOptions options = {}, base::Clock& clock = base::RealClock());
  ~RecycleController();

  Status Start();
  void Stop();
  // One reconcile of a sandbox on the caller's thread.
  Status Reconcile(std::string_view namespace_, std::string_view name);

 private:
  void Worker();
  Status Fail(const api::Object& sandbox, const std::string& why);

  PoolInformers& informers_;
  store::Store& store_;
  SandboxResetter* resetter_;
  claim::SandboxConnector* connector_;
  obs::EventRecorder* events_;
  RecycleControllerOptions options_;
  base::Clock& clock_;
  WorkQueue queue_;
  obs::CounterFamily& total_;
  obs::HistogramFamily& duration_;
  std::vector<std::thread> workers_;
  bool started_ = false;
};

// What the E2B DELETE (and anyone deleting a claimed sandbox on a user's behalf) calls: when the
// sandbox belongs to a pool that recycles (cleanup-enabled on the sandbox or its SandboxSet)
// and is Running, it is marked agents.kruise.io/cleanup=true and returned to the pool by the
// RecycleController; otherwise it is deleted. Returns true when it was marked for recycling.
// Errors are the store's (NotFound when it is already gone).
Result<bool> DeleteOrRecycle(store::Store& store, const api::Object& sandbox);

// The first half of DeleteOrRecycle: marks the sandbox for recycling when it qualifies and
// returns true; returns false (and does nothing) when it does not.
Result<bool> RequestRecycle(store::Store& store, const api::Object& sandbox);

}  // namespace warren::controller
