#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/sandbox_secrets.h"
#include "base/result.h"
#include "image/image_store.h"
#include "node/node_agent.h"
#include "store/testing/temp_store.h"

namespace warren::bench {

// A node agent for the benches that drive Sandbox objects through it (node_ready, probes): a
// temporary data directory (o+x, as user namespaces need) and store, the built warren-envd,
// testing secrets, logs at warn; started, with `image` resolvable in the image store. Everything
// goes with it (stop the agent first when its sandboxes are to be gone). Not thread-safe.
class BenchNode {
 public:
  // FailedPrecondition when the agent cannot start, NotFound when `image` never appears.
  static Result<std::unique_ptr<BenchNode>> Start(const std::string& envd_path,
                                                  const std::string& image);
  ~BenchNode();

  const std::string& dir() const { return dir_.path(); }
  store::Store& store() { return store_.store(); }
  const node::NodeAgentOptions& options() const { return options_; }
  node::NodeAgent& agent() { return *agent_; }
  image::ImageStore& images() { return *images_; }
  const image::ResolvedImage& image() const { return image_; }

 private:
  BenchNode() = default;

  store::testing::TempDir dir_;
  store::testing::TempStore store_;
  const api::SandboxSecrets secrets_ = api::SandboxSecrets::ForTesting();
  node::NodeAgentOptions options_;
  std::unique_ptr<node::NodeAgent> agent_;
  std::unique_ptr<image::ImageStore> images_;
  image::ResolvedImage image_;
};

}  // namespace warren::bench
