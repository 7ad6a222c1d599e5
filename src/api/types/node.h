#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// Node (warren.dev/v1alpha1, no; cluster-scoped): a machine that runs sandboxes. The node
// agent owns its status.
struct NodeSpec {
  WARREN_API_STRUCT;
  bool unschedulable = false;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("unschedulable", s.unschedulable);
  }
};

// An image in the node's store (Kubernetes' ContainerImage).
struct NodeImage {
  WARREN_API_STRUCT;
  std::vector<std::string> names;
  int64_t size_bytes = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("names", s.names);
    v("sizeBytes", s.size_bytes);
  }
};

struct NodeStatus {
  WARREN_API_STRUCT;
  std::map<std::string, Quantity> capacity;  // cpu, memory, sandboxes
  std::map<std::string, Quantity> allocatable;
  std::vector<Condition> conditions;         // Ready
  std::string address;                       // where the node agent listens
  std::vector<std::string> runtime_classes;  // native, gvisor
  std::string version;                       // warren version
  std::string kernel_version;
  int32_t sandboxes = 0;
  std::optional<base::WallTime> last_heartbeat_time;
  std::vector<NodeImage> images;  // what the node's image store holds

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("capacity", s.capacity);
    v("allocatable", s.allocatable);
    v("conditions", s.conditions);
    v("address", s.address);
    v("runtimeClasses", s.runtime_classes);
    v("version", s.version);
    v("kernelVersion", s.kernel_version);
    v("sandboxes", s.sandboxes);
    v("lastHeartbeatTime", s.last_heartbeat_time);
    v("images", s.images);
  }
};

}  // namespace warren::api
