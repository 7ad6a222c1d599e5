#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "base/clock.h"
#include "store/store.h"

namespace warren::controller::testing {

// A Node object as a node agent publishes it, for tests of the controllers that read Nodes
// (the scheduler, node lifecycle, the claimer's readiness filter).
struct TestNode {
  std::string name;
  int64_t cpu_millicores = 8000;
  int64_t memory_bytes = int64_t{16} << 30;
  std::optional<int64_t> sandboxes;  // capacity "sandboxes"
  std::string ready = "True";        // condition Ready's status; "" = no condition
  bool unschedulable = false;
  std::vector<std::string> runtime_classes = {"native"};
  std::vector<std::string> images;
  std::optional<base::WallTime> heartbeat;  // status.lastHeartbeatTime
};

// Creates the Node, or replaces its spec and status (CHECK-fails on a store error).
api::Object PutNode(store::Store& store, const TestNode& node);

// What a node agent's renewal writes: lastHeartbeatTime = `at` and Ready=True.
void RenewNode(store::Store& store, const std::string& name, base::WallTime at);

}  // namespace warren::controller::testing
