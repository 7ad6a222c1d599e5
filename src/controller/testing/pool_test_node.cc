#include "controller/testing/pool_test_node.h"

#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/check.h"
#include "base/time_format.h"
#include "controller/work_queue.h"

namespace warren::controller::testing {

namespace {

// Running with spec.paused, or Paused without it: the node has a pause or a resume to make.
bool PauseDiffers(const api::Object& sandbox) {
  const api::Json& st = sandbox.status();
  std::string phase = st.is_object() ? st.value("phase", "") : "";
  bool paused = sandbox.spec().is_object() && sandbox.spec().value("paused", false);
  return (paused && phase == "Running") || (!paused && phase == "Paused");
}

}  // namespace

struct PoolTestNode::Queue {
  WorkQueue queue;
};

PoolTestNode::PoolTestNode(store::Store& store) : store_(store), queue_(std::make_unique<Queue>()) {
  auto selector = api::LabelSelector::Parse(api::labels::kSandboxPool);
  CHECK_OK(selector.status());
  sandboxes_ = std::make_unique<Informer>(
      store, Informer::Options{
                 .kind = &api::SandboxKind(), .label_selector = *selector, .name = "test-node"});
  sandboxes_->AddHandler([this](const Informer::Change& c) {
    if (c.type == store::EventType::kDeleted) return;
    const api::Json& st = c.object->status();
    if (st.is_object() && st.contains("phase") && !(follow_pause_ && PauseDiffers(*c.object))) {
      return;
    }
    queue_->queue.Add(c.object->metadata.namespace_ + "/" + c.object->metadata.name);
  });
  CHECK_OK(sandboxes_->Start());
  worker_ = std::make_unique<std::thread>([this] {
    while (auto key = queue_->queue.Get()) {
      auto slash = key->find('/');
      if (!hold_) MarkReady(key->substr(0, slash), key->substr(slash + 1));
      if (follow_pause_) FollowPause(key->substr(0, slash), key->substr(slash + 1));
      queue_->queue.Done(*key);
    }
  });
}

PoolTestNode::~PoolTestNode() {
  queue_->queue.ShutDown();
  worker_->join();
  sandboxes_->Stop();
}

void PoolTestNode::MarkReady(const std::string& ns, const std::string& name) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto sbx = store_.Get(api::SandboxKind(), ns, name);
    if (!sbx.ok()) return;
    if (sbx->status().is_object() && sbx->status().contains("phase")) return;
    std::string now = base::FormatRfc3339(base::RealClock().Now());
    sbx->status() = {{"phase", "Running"},
                     {"nodeName", "test-node"},
                     {"conditions",
                      {{{"type", "Ready"},
                        {"status", "True"},
                        {"reason", "PodReady"},
                        {"lastTransitionTime", now}}}}};
    auto r = store_.UpdateStatus(*sbx);
    if (r.ok() || r.status().code() != StatusCode::kAborted) return;
  }
}

void PoolTestNode::FollowPause(const std::string& ns, const std::string& name) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto sbx = store_.Get(api::SandboxKind(), ns, name);
    if (!sbx.ok() || !PauseDiffers(*sbx)) return;
    const bool pause = sbx->spec().value("paused", false);
    sbx->status()["phase"] = pause ? "Paused" : "Running";
    sbx->status()["conditions"] = {{{"type", "Ready"},
                                    {"status", pause ? "False" : "True"},
                                    {"reason", pause ? "SandboxPaused" : "PodReady"}}};
    auto r = store_.UpdateStatus(*sbx);
    if (r.ok() || r.status().code() != StatusCode::kAborted) return;
  }
}

void PoolTestNode::ReadyAll() {
  for (const auto& s : sandboxes_->List()) {
    MarkReady(s->metadata.namespace_, s->metadata.name);
  }
}

void PoolTestNode::Fail(const std::string& ns, const std::string& name) {
  for (int attempt = 0; attempt < 10; ++attempt) {
    auto sbx = store_.Get(api::SandboxKind(), ns, name);
    if (!sbx.ok()) return;
    sbx->status()["phase"] = "Failed";
    sbx->status()["conditions"] = {{{"type", "Ready"}, {"status", "False"}, {"reason", "Failed"}}};
    auto r = store_.UpdateStatus(*sbx);
    if (r.ok() || r.status().code() != StatusCode::kAborted) return;
  }
}

}  // namespace warren::controller::testing
