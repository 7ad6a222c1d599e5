#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "image/image_store.h"
#include "node/sandbox_plan.h"
#include "store/store.h"

namespace warren::node {

// What a node says of itself in its Node object.
struct NodeRegistration {
  std::string name;
  NodeCapacity capacity;
  std::vector<std::string> runtime_classes;
  // Where its relay listens (relay_routes.h), "host:port"; empty for the node inside
  // `warren server`, which the server reaches in process.
  std::string address;
};

// Creates the node's Node object (labels kubernetes.io/hostname and warren.dev/node, both the
// node's name), or refreshes its status: capacity, runtime classes, kernel, Ready, and the
// images its store holds (what ImagePullJobs and placement look at). Labels an operator added
// stay. Blocking (store writes).
Status PublishNode(store::Store& store, const NodeRegistration& node,
                   const image::ImageStore& images, base::Clock& clock);

// The node's heartbeat (`warren node`, every second): lastHeartbeatTime now and Ready=True
// again if the node lifecycle controller had marked it Unknown; the rest of the status as it
// is. NotFound when the Node object is gone (PublishNode makes it again). Blocking.
Status RenewNodeHeartbeat(store::Store& store, const std::string& name, base::Clock& clock);

}  // namespace warren::node
