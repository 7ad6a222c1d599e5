#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "api/object.h"
#include "base/result.h"
#include "controller/informer.h"
#include "controller/work_queue.h"
#include "sbnet/egress_policy.h"
#include "store/store.h"

namespace warren::controller {

// The egress a TrafficPolicy states (openkruise-agents.md §1.8) in the node's terms: `allow`
// peers (cidr, fqdn) join allowOut, `reject` CIDRs join denyOut. InvalidArgument naming the
// rule and peer when an entry is not an address, CIDR or name Warren can enforce.
Result<sbnet::EgressPolicy> EgressOfTrafficPolicy(const api::Object& policy);

// Enforces TrafficPolicies through the node's own egress rules: for every Sandbox, the policies
// of its namespace whose selector matches its labels, merged (sbnet::MergeEgressPolicies), are
// written to its `warren.dev/traffic-policy` annotation, which the node agent applies with the
// E2B network fields (node/egress.h) — at once for a running sandbox. A policy that selects no
// sandbox any more leaves none behind. Each policy's status says whether it is in force
// (condition Accepted) and how many Sandboxes it selects; one Warren cannot enforce as written
// (admission lets few through) closes its sandboxes' egress instead (fail closed) and says why.
//
// Work is per namespace: a policy's change, or a Sandbox appearing or changing labels, queues
// its namespace. Thread-safe; one worker thread. Borrows the store.
class TrafficPolicyController {
 public:
  explicit TrafficPolicyController(store::Store& store);
  ~TrafficPolicyController();

  Status Start();
  void Stop();
  // Reconciles done so far (tests wait on it).
  uint64_t reconciles() const { return reconciles_.load(); }

 private:
  void OnPolicy(const Informer::Change& change);
  void OnSandbox(const Informer::Change& change);
  void Run();
  Status Reconcile(const std::string& namespace_);

  store::Store& store_;
  Informer policies_;
  Informer sandboxes_;
  WorkQueue queue_;
  std::thread worker_;
  std::atomic<uint64_t> reconciles_{0};
};

}  // namespace warren::controller
