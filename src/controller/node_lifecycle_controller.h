#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "controller/informer.h"
#include "obs/event_recorder.h"
#include "store/store.h"

namespace warren::controller {

// Strings of node loss, on Nodes and Sandboxes.
namespace node_lifecycle {
// Node condition Ready=Unknown, and its Warning Event on the Node.
inline constexpr const char* kReasonNodeStatusUnknown = "NodeStatusUnknown";
// Sandbox phase Failed, condition Ready=False, and its Warning Event on the Sandbox.
inline constexpr const char* kReasonNodeLost = "NodeLost";
}  // namespace node_lifecycle

struct NodeLifecycleOptions {
  // A Node whose status.lastHeartbeatTime is older than this is lost (its agent renews it
  // every second).
  std::chrono::milliseconds grace{5'000};
  // How often heartbeats are checked (on the real clock; Kick checks at once).
  std::chrono::milliseconds period{500};
  // Nodes never judged: the node agent inside this very process (embedded mode), which is
  // alive as long as the controller is, whatever its Node says.
  std::set<std::string> exempt_nodes;
};

// Node loss (issue 17 part 5, the control plane's half), like Kubernetes' node lifecycle
// controller. A Node whose status.lastHeartbeatTime is older than `grace` — measured on the
// injected clock, and never less than `grace` after this controller started, so a controller
// that starts next to stale Nodes gives them one grace to renew — gets condition Ready=Unknown,
// reason NodeStatusUnknown, message "node stopped renewing its heartbeat at <time>", and a
// Warning Event on the Node. Then every Sandbox whose status.nodeName is that node and that is
// not Succeeded or Failed becomes phase Failed with condition Ready=False, reason NodeLost, a
// message naming the node and the time, and a Warning Event NodeLost (pools replace their
// Failed members; claims skip members on a node not Ready: claim/pool_index.h). A Sandbox of
// that node being deleted loses the node agent's finalizer, whose teardown the lost node cannot
// run: it goes at once rather than staying Terminating until the node returns (Kubernetes' pod
// GC does this for out-of-service nodes; here a lost node's sandboxes are lost already).
//
// A Node with no lastHeartbeatTime has never been heard from and is never judged. When the node
// renews (a newer heartbeat; its agent writes Ready=True itself) nothing more is done: its lost
// sandboxes stay Failed, and the agent destroys what it still runs of them (a Failed sandbox
// keeps no runtime resources, node/README.md).
//
// Writes are conditional on the version read; a conflict is retried at the next check.
// Thread-safe; one worker thread. Borrows the store, clock and recorder (may be null).
class NodeLifecycleController {
 public:
  NodeLifecycleController(store::Store& store, base::Clock& clock, obs::EventRecorder* events,
                          NodeLifecycleOptions options = {});
  ~NodeLifecycleController();

  Status Start();
  void Stop();
  // Checks now (after a fake clock moved, in tests).
  void Kick();

 private:
  void Run();
  void Check();
  // Marks the Node lost; false when the write failed (retried at the next check).
  bool MarkNodeLost(const api::Object& node, base::WallTime heartbeat);
  // True when every sandbox of the node is marked (or released, when being deleted).
  bool MarkSandboxesLost(const std::string& node, base::WallTime heartbeat);
  // A deleted sandbox of a lost node without the node agent's finalizer; false when the write
  // failed (retried at the next check).
  bool ReleaseDeleted(const api::Object& sandbox, const std::string& node);

  store::Store& store_;
  base::Clock& clock_;
  obs::EventRecorder* events_;
  const NodeLifecycleOptions options_;
  Informer nodes_;
  Informer sandboxes_;
  base::WallTime started_{};
  // Sandbox changes seen; a lost node whose sandboxes were all marked is walked again only
  // after one (or a new heartbeat), not at every check.
  std::atomic<uint64_t> sandbox_changes_{0};
  struct Swept {
    base::WallTime heartbeat;
    uint64_t sandbox_changes = 0;
  };
  std::map<std::string, Swept> swept_;  // worker thread only

  std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;  // guarded by mu_
  bool kicked_ = false;    // guarded by mu_
  std::thread worker_;
};

}  // namespace warren::controller
