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
};

// Creates the node's Node object (labels kubernetes.io/hostname and warren.dev/node, both the
// node's name), or refreshes its status: capacity, runtime classes, kernel, Ready, and the
// images its store holds (what ImagePullJobs and placement look at). Labels an operator added
// stay. Blocking (store writes).
Status PublishNode(store::Store& store, const NodeRegistration& node,
                   const image::ImageStore& images, base::Clock& clock);

}  // namespace warren::node
