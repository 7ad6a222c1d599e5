#include "common/bench_node.h"

#include <fmt/format.h>
#include <sys/stat.h>

#include <thread>

#include "base/log.h"

namespace warren::bench {

using namespace std::chrono_literals;

Result<std::unique_ptr<BenchNode>> BenchNode::Start(const std::string& envd_path,
                                                    const std::string& image) {
  base::SetLogLevel("warn");
  std::unique_ptr<BenchNode> n(new BenchNode());
  chmod(n->dir_.path().c_str(), 0711);
  n->options_ = node::NodeAgentOptions::ForDataDir(n->dir_.path() + "/data");
  n->options_.envd_path = envd_path;
  n->options_.stats_interval = 5s;
  n->options_.secrets = &n->secrets_;
  n->agent_ = std::make_unique<node::NodeAgent>(n->store_.store(), n->options_);
  RETURN_IF_ERROR(n->agent_->Start().WithPrefix("agent"));
  ASSIGN_OR_RETURN(n->images_, image::ImageStore::Open({.root = n->options_.image_root}));
  // The agent imports the built-in images on a thread of its own.
  Result<image::ResolvedImage> resolved = NotFoundError("");
  for (int i = 0; i < 600 && !(resolved = n->images_->Resolve(image)).ok(); ++i) {
    std::this_thread::sleep_for(100ms);
  }
  if (!resolved.ok()) return resolved.status().WithPrefix(fmt::format("image {}", image));
  n->image_ = std::move(*resolved);
  return n;
}

BenchNode::~BenchNode() {
  if (agent_) agent_->Stop();
}

}  // namespace warren::bench
