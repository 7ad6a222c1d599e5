#pragma once

#include <memory>

#include "api/sandbox_secrets.h"
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
//   nodes      — every Node (claims skip members on a node that is not Ready)
// Parts add their handlers after construction and before Start. It also hands every part the
// two things they all write through: the store, and the install's SandboxSecrets (a member's
// pool token, a claimant's token and /init body are sealed on the object). Borrows both.
// Thread-safe after Start.
class PoolInformers {
 public:
  PoolInformers(store::Store& store, const api::SandboxSecrets& secrets);
  ~PoolInformers();

  Informer& sets() { return *sets_; }
  Informer& sandboxes() { return *sandboxes_; }
  Informer& templates() { return *templates_; }
  Informer& nodes() { return *nodes_; }
  store::Store& store() { return store_; }
  const api::SandboxSecrets& secrets() const { return secrets_; }

  // Lists and watches all four (templates, nodes, then sets, then sandboxes, so a handler that
  // sees a sandbox can find its set, template and node).
  Status Start();
  void Stop();
  bool started() const { return started_; }

 private:
  store::Store& store_;
  const api::SandboxSecrets& secrets_;
  std::unique_ptr<Informer> sets_, sandboxes_, templates_, nodes_;
  bool started_ = false;
};

}  // namespace warren::controller
