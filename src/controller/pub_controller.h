#pragma once

#include <atomic>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "controller/work_queue.h"
#include "store/store.h"

namespace warren::controller {

// Keeps the status of every PodUnavailableBudget (api/types/pod_unavailable_budget.h): counts,
// condition DisruptionAllowed, and the memory of admitted evictions (disruptedPods,
// unavailablePodGroups) pruned as their deletions are seen or their 20 s pass, with the math of
// disruption_budget.h. The eviction route (server/eviction_api.h) writes the same status when it
// admits an eviction; both write only over the revision they read, so neither loses the other's
// entries.
//
// A budget is reconciled when it changes, when a Sandbox or SandboxSet of its namespace changes,
// and when its earliest disruptedPods entry expires. Each reconcile reads the budget and then
// lists the namespace's Sandboxes from the store, so the list is at least as new as the budget
// and an entry whose sandbox is missing from it was seen deleted. One worker thread; borrows
// the store and the clock.
class PubController {
 public:
  PubController(store::Store& store, base::Clock& clock);
  ~PubController();

  Status Start();
  void Stop();
  // Reconciles done so far (tests wait on it).
  uint64_t reconciles() const { return reconciles_.load(); }

 private:
  void QueueNamespace(const std::string& ns);
  void Run();
  Status Reconcile(const std::string& key);

  store::Store& store_;
  base::Clock& clock_;
  Informer budgets_;
  Informer sandboxes_;  // only to know when to look again
  Informer sets_;       // spec.replicas of targetRef budgets
  WorkQueue queue_;
  std::thread worker_;
  std::atomic<uint64_t> reconciles_{0};
};

}  // namespace warren::controller
