#pragma once

#include <memory>

#include "base/status.h"
#include "controller/informer.h"
#include "store/store.h"

namespace warren::controller {

// The caches every warm-pool part reads (the SandboxSet and SandboxClaim controllers, the
// claimer, recycling), shared so the process holds one copy and one watch of each:
//   sets       — every SandboxSet
//   sandboxes  — every Sandbox carrying the agents.kruise.io/sandbox-pool label (members,
//                claimed ones, ones being recycled)
//   templates  — every SandboxTemplate (revisions, and the targets of templateRef)
// Parts add their handlers after construction and before Start. Borrows the store.
// Thread-safe after Start.
class PoolInformers {
 public:
  explicit PoolInformers(store::Store& store);
  ~PoolInformers();

  Informer& sets() { return *sets_; }
  Informer& sandboxes() { return *sandboxes_; }
  Informer& templates() { return *templates_; }
  store::Store& store() { return store_; }

  // Lists and watches all three (templates first, then sets, then sandboxes, so a handler that
  // sees a sandbox can find its set and template).
  Status Start();
  void Stop();
  bool started() const { return started_; }

 private:
  store::Store& store_;
  std::unique_ptr<Informer> sets_, sandboxes_, templates_;
  bool started_ = false;
};

}  // namespace warren::controller
