#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "controller/placement.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"
#include "store/store.h"

namespace warren::controller {

struct SchedulerOptions {
  // A sandbox nothing fits is looked at again after this even when no Node or Sandbox changed
  // (a safety net: those changes requeue it at once).
  std::chrono::milliseconds unschedulable_retry{10'000};
  // How long a placement this scheduler wrote is counted on its node while its own cache has
  // not shown it yet (then the cache's view wins).
  std::chrono::milliseconds assume_ttl{30'000};
  // A sandbox whose templateRef names a SandboxTemplate not in the cache waits this long after
  // its creation for it (the template cache may be a moment behind), then is placed by the
  // default demand.
  std::chrono::milliseconds template_wait{5'000};
};

// The cluster's scheduler (issue 17 part 3): every Sandbox whose status.nodeName is empty and
// that is not being deleted gets a node chosen by Place (placement.h) from the Nodes and the
// sandboxes already placed, written as status.nodeName with condition PodScheduled=True
// (reason Scheduled) and a Normal Event Scheduled — one UpdateStatus conditional on the version
// read, so a sandbox changed meanwhile (or placed by another scheduler, or taken by an embedded
// node agent) is looked at again instead of overwritten. When nothing fits the sandbox stays
// Pending with PodScheduled=False, reason Unschedulable and Kubernetes' aggregate message, and a
// Warning Event FailedScheduling; it is tried again whenever a Node's schedulable facts change
// or a placed sandbox goes or ends, and every `unschedulable_retry`.
//
// Node agents in a cluster (`warren node`, NodeAgentOptions::take_unplaced=false) start a
// sandbox only once it names them; they keep the PodScheduled condition in their own writes.
//
// One worker decides one sandbox at a time. A placement it wrote counts against its node at once
// (an assumed placement, as kube-scheduler's cache keeps) until the sandbox cache shows it, so
// two quick decisions never book the same room twice.
//
// Thread-safe. Borrows the store, clock and recorder (may be null: no Events), which must
// outlive it.
class SchedulerController {
 public:
  SchedulerController(store::Store& store, base::Clock& clock, obs::EventRecorder* events,
                      SchedulerOptions options = {});
  ~SchedulerController();

  Status Start();
  void Stop();

 private:
  struct Entry {
    std::string uid;
    int64_t generation = 0;
    bool resolved = false;  // its template was found (else the demand is the defaults)
    PlacedSandbox placed;   // node empty: not placed
    bool holds = false;     // placed, not Succeeded/Failed: counts on its node
    bool pending = false;   // not placed and not being deleted: ours to place
  };
  struct Assumed {
    std::string uid;
    PlacedSandbox placed;
    std::chrono::steady_clock::time_point until;
  };

  void OnSandbox(const Informer::Change& change);
  void OnNode(const Informer::Change& change);
  void RequeuePending();
  // The template the sandbox runs, from the cache; null when it cannot be resolved.
  std::optional<api::PodTemplateSpec> TemplateOf(const api::Object& sandbox) const;
  // Fills e's demand from `sandbox` when its spec is new to it or its template was missing.
  // Under mu_.
  void RefreshDemandLocked(Entry& e, const api::Object& sandbox) const;
  void Run();
  Status Reconcile(const std::string& key);

  store::Store& store_;
  base::Clock& clock_;
  obs::EventRecorder* events_;
  const SchedulerOptions options_;
  Informer templates_;
  Informer nodes_;
  Informer sandboxes_;
  WorkQueue queue_;

  mutable std::mutex mu_;
  std::map<std::string, Entry> entries_;    // "ns/name" of every Sandbox; guarded by mu_
  std::map<std::string, Assumed> assumed_;  // "ns/name"; guarded by mu_
  std::thread worker_;
};

}  // namespace warren::controller
