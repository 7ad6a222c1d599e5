#pragma once

#include <string>
#include <thread>

#include "api/object.h"
#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"
#include "store/store.h"

namespace warren::controller {

// SandboxUpdateOps (api/types/sandbox_update_ops.h; reference/openkruise-agents.md §1.5, §2.5):
// rolls a strategic-merge patch of the pod template over the Sandboxes of its namespace that
// spec.selector picks and whose phase is in spec.stateFilter.states (or that already carry its
// label agents.kruise.io/update-ops), in name order. update_ops_rollout.h decides which to start
// (maxUnavailable, paused, partition, a failure stops it); this class reads and writes.
//
// Starting a sandbox is one update of it: spec.template = its effective template with the patch
// applied (update_ops_template.h), spec.templateRef removed, spec.lifecycle = the ops' hooks,
// spec.upgradePolicy = {type}, the update-ops label, and for a Paused sandbox the annotation
// agents.kruise.io/upgrade-resume-trigger. The node agent does the update and reports it:
// status.updateRevision = the target and Ready (done), or status.failedUpdateRevision = the
// target with condition InplaceUpdate False/Failed (failed). A done sandbox gets its
// upgradePolicy and resume trigger cleared; a failed one the label upgrade-failed=true, and the
// ops stops (phase Failed, condition Progressing False/SandboxUpdateFailed quoting the node).
//
// One ops per namespace is active (phase neither Completed nor Failed): admission cannot list,
// so it is enforced here — the younger of two active ops is set Failed (AnotherOpsActive)
// without touching a sandbox. A Completed ops whose spec is edited (a lower partition) goes on
// unless another one is active. The ops carries finalizer agents.kruise.io/sandbox-update-ops:
// on deletion its labels are taken off the sandboxes before it goes.
//
// Thread-safe; one worker thread. Borrows the store, the clock and the recorder (may be null).
class SandboxUpdateOpsController {
 public:
  SandboxUpdateOpsController(store::Store& store, obs::EventRecorder* events,
                             base::Clock& clock = base::RealClock());
  ~SandboxUpdateOpsController();

  Status Start();
  void Stop();

 private:
  void Run();
  void QueueNamespace(const std::string& namespace_);
  // Ok, or an error to retry with backoff (a conflict with the node's write, a store error).
  Status Reconcile(const std::string& key);
  Status Finalize(api::Object ops);
  // Writes `sandbox` (from the cache) and waits until the cache has the write, so the next
  // reconcile reads what it wrote.
  Status WriteSandbox(api::Object sandbox);
  void Event(const api::Object& ops, bool warning, std::string_view reason,
             std::string_view message);

  store::Store& store_;
  obs::EventRecorder* events_;
  base::Clock& clock_;
  Informer ops_;
  Informer sandboxes_;
  Informer templates_;
  WorkQueue queue_;
  std::thread worker_;
};

}  // namespace warren::controller
