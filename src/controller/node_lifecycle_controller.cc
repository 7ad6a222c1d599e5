#include "controller/node_lifecycle_controller.h"

#include <fmt/format.h>

#include <algorithm>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/node.h"
#include "api/types/sandbox.h"
#include "base/log.h"
#include "base/time_format.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("nodelifecycle");
  return logger;
}

// The Node's condition message (the Node names itself).
std::string NodeMessage(base::WallTime heartbeat) {
  return fmt::format("node stopped renewing its heartbeat at {}", base::FormatRfc3339(heartbeat));
}

std::string SandboxMessage(const std::string& node, base::WallTime heartbeat) {
  return fmt::format(
      "node {} stopped renewing its heartbeat at {}; the sandbox's processes and memory are "
      "lost with it",
      node, base::FormatRfc3339(heartbeat));
}

}  // namespace

NodeLifecycleController::NodeLifecycleController(store::Store& store, base::Clock& clock,
                                                 obs::EventRecorder* events,
                                                 NodeLifecycleOptions options)
    : store_(store),
      clock_(clock),
      events_(events),
      options_(std::move(options)),
      nodes_(store, {.kind = &api::NodeKind(), .name = "nodelifecycle nodes"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "nodelifecycle sandboxes"}) {
  sandboxes_.AddHandler([this](const Informer::Change&) { ++sandbox_changes_; });
}

NodeLifecycleController::~NodeLifecycleController() { Stop(); }

Status NodeLifecycleController::Start() {
  started_ = clock_.Now();
  RETURN_IF_ERROR(nodes_.Start());
  RETURN_IF_ERROR(sandboxes_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void NodeLifecycleController::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
  sandboxes_.Stop();
  nodes_.Stop();
}

void NodeLifecycleController::Kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  wake_.notify_all();
}

void NodeLifecycleController::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    wake_.wait_for(lock, options_.period, [this] { return stopping_ || kicked_; });
    if (stopping_) break;
    kicked_ = false;
    lock.unlock();
    Check();
    lock.lock();
  }
}

void NodeLifecycleController::Check() {
  const base::WallTime now = clock_.Now();
  // A controller that just started gives every Node one grace to renew.
  if (now - started_ <= options_.grace) return;
  for (const auto& node : nodes_.List()) {
    const std::string& name = node->metadata.name;
    if (node->metadata.deletion_timestamp || options_.exempt_nodes.contains(name)) continue;
    auto status = api::DecodeStatus<api::NodeStatus>(*node);
    if (!status.ok() || !status->last_heartbeat_time) continue;  // never heard from
    const base::WallTime heartbeat = *status->last_heartbeat_time;
    if (now - heartbeat <= options_.grace) continue;
    const api::Condition* ready = api::FindCondition(status->conditions, "Ready");
    const bool marked = ready != nullptr && ready->status == "Unknown" &&
                        ready->reason == node_lifecycle::kReasonNodeStatusUnknown;
    if (!marked && !MarkNodeLost(*node, heartbeat)) continue;
    const uint64_t changes = sandbox_changes_.load();
    auto swept = swept_.find(name);
    if (swept != swept_.end() && swept->second.heartbeat == heartbeat &&
        swept->second.sandbox_changes == changes) {
      continue;
    }
    if (MarkSandboxesLost(name, heartbeat)) {
      swept_[name] = Swept{heartbeat, changes};
    } else {
      swept_.erase(name);
    }
  }
}

bool NodeLifecycleController::MarkNodeLost(const api::Object& node, base::WallTime heartbeat) {
  api::Object obj = node;  // its resourceVersion is the precondition: a renewal wins
  auto status = api::DecodeStatus<api::NodeStatus>(obj);
  if (!status.ok()) return false;
  const std::string message = NodeMessage(heartbeat);
  api::SetCondition(status->conditions,
                    {.type = "Ready",
                     .status = "Unknown",
                     .reason = node_lifecycle::kReasonNodeStatusUnknown,
                     .message = message},
                    clock_.Now());
  api::EncodeStatus(*status, obj);
  auto written = store_.UpdateStatus(std::move(obj));
  if (!written.ok()) {
    Log()->info("node={} not marked lost yet: {}", node.metadata.name, written.status().ToString());
    return false;
  }
  Log()->warn("node={} lost: {}", node.metadata.name, message);
  if (events_) {
    events_->Warning(*written, node_lifecycle::kReasonNodeStatusUnknown, message).IgnoreError();
  }
  return true;
}

bool NodeLifecycleController::ReleaseDeleted(const api::Object& sandbox, const std::string& node) {
  if (!sandbox.HasFinalizer(api::finalizers::kSandbox)) return true;
  api::Object obj = sandbox;
  obj.RemoveFinalizer(api::finalizers::kSandbox);
  auto written = store_.Update(std::move(obj));
  if (!written.ok() && written.status().code() != StatusCode::kNotFound) {
    Log()->info("sandbox={} deleted on lost node={}, not released yet: {}", sandbox.Key(), node,
                written.status().ToString());
    return false;
  }
  Log()->warn("sandbox={} deleted on lost node={}: released without its node's teardown",
              sandbox.Key(), node);
  return true;
}

bool NodeLifecycleController::MarkSandboxesLost(const std::string& node, base::WallTime heartbeat) {
  const std::string message = SandboxMessage(node, heartbeat);
  bool all = true;
  for (const auto& sandbox : sandboxes_.List()) {
    auto status = api::DecodeStatus<api::SandboxStatus>(*sandbox);
    if (!status.ok() || status->node_name != node) continue;
    if (sandbox->metadata.deletion_timestamp) {
      if (!ReleaseDeleted(*sandbox, node)) all = false;
      continue;
    }
    if (status->phase == api::sandbox_phase::kSucceeded ||
        status->phase == api::sandbox_phase::kFailed) {
      continue;
    }
    api::Object obj = *sandbox;  // conditional on the cached version; a conflict waits a check
    status->phase = api::sandbox_phase::kFailed;
    status->message = message;
    api::SetCondition(status->conditions,
                      {.type = "Ready",
                       .status = "False",
                       .reason = node_lifecycle::kReasonNodeLost,
                       .message = message},
                      clock_.Now());
    api::EncodeStatus(*status, obj);
    auto written = store_.UpdateStatus(std::move(obj));
    if (!written.ok()) {
      if (written.status().code() != StatusCode::kNotFound) {
        Log()->info("sandbox={} not marked lost yet: {}", sandbox->Key(),
                    written.status().ToString());
        all = false;
      }
      continue;
    }
    Log()->warn("sandbox={} lost with node={}", sandbox->Key(), node);
    if (events_) {
      events_->Warning(*written, node_lifecycle::kReasonNodeLost, message).IgnoreError();
    }
  }
  return all;
}

}  // namespace warren::controller
