#include "controller/scheduler_controller.h"

#include <fmt/format.h>

#include <vector>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_template.h"
#include "base/log.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("scheduler");
  return logger;
}

std::string KeyOf(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

std::string StatusString(const api::Object& o, const char* field) {
  const api::Json& status = o.status();
  if (!status.is_object()) return {};
  auto it = status.find(field);
  return it != status.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool Terminal(const std::string& phase) {
  return phase == api::sandbox_phase::kSucceeded || phase == api::sandbox_phase::kFailed;
}

}  // namespace

SchedulerController::SchedulerController(store::Store& store, base::Clock& clock,
                                         obs::EventRecorder* events, SchedulerOptions options)
    : store_(store),
      clock_(clock),
      events_(events),
      options_(options),
      templates_(store, {.kind = &api::SandboxTemplateKind(), .name = "scheduler templates"}),
      nodes_(store, {.kind = &api::NodeKind(), .name = "scheduler nodes"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "scheduler sandboxes"}) {
  sandboxes_.AddHandler([this](const Informer::Change& c) { OnSandbox(c); });
  nodes_.AddHandler([this](const Informer::Change& c) { OnNode(c); });
}

SchedulerController::~SchedulerController() { Stop(); }

Status SchedulerController::Start() {
  // Templates and nodes first: a sandbox seen at the start finds what it runs and where.
  RETURN_IF_ERROR(templates_.Start());
  RETURN_IF_ERROR(nodes_.Start());
  RETURN_IF_ERROR(sandboxes_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void SchedulerController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  sandboxes_.Stop();
  nodes_.Stop();
  templates_.Stop();
}

std::optional<api::PodTemplateSpec> SchedulerController::TemplateOf(
    const api::Object& sandbox) const {
  auto spec = api::DecodeSpec<api::SandboxSpec>(sandbox);
  if (!spec.ok()) return std::nullopt;
  if (spec->pod_template) return spec->pod_template;
  if (!spec->template_ref || spec->template_ref->name.empty()) return std::nullopt;
  ObjectPtr tmpl = templates_.Get(sandbox.metadata.namespace_, spec->template_ref->name);
  if (!tmpl) return std::nullopt;
  auto tspec = api::DecodeSpec<api::SandboxTemplateSpec>(*tmpl);
  if (!tspec.ok()) return std::nullopt;
  return tspec->pod_template;
}

void SchedulerController::RefreshDemandLocked(Entry& e, const api::Object& o) const {
  // The demand follows the spec (a new generation); a status write keeps it.
  if (e.resolved && e.uid == o.metadata.uid && e.generation == o.metadata.generation) return;
  auto pod = TemplateOf(o);
  e.placed.demand = DemandOf(o, pod ? &*pod : nullptr);
  e.resolved = pod.has_value();
  e.uid = o.metadata.uid;
  e.generation = o.metadata.generation;
}

void SchedulerController::OnSandbox(const Informer::Change& c) {
  const api::Object& o = *c.object;
  const std::string key = KeyOf(o);
  bool freed = false;
  bool queue = false;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(key);
    if (c.type == store::EventType::kDeleted) {
      if (it != entries_.end()) {
        freed = it->second.holds;
        entries_.erase(it);
      }
      assumed_.erase(key);
    } else {
      Entry& e = entries_[key];
      const bool was_holding = e.holds;
      RefreshDemandLocked(e, o);
      e.placed.node = StatusString(o, "nodeName");
      e.holds = !e.placed.node.empty() && !Terminal(StatusString(o, "phase"));
      e.pending = e.placed.node.empty() && !o.metadata.deletion_timestamp;
      freed = was_holding && !e.holds;
      queue = e.pending;
      // The cache now shows what this scheduler assumed (or the sandbox went another way).
      auto a = assumed_.find(key);
      if (a != assumed_.end() && (a->second.uid != o.metadata.uid || !e.placed.node.empty())) {
        assumed_.erase(a);
      }
    }
  }
  if (queue) queue_.Add(key);
  if (freed) RequeuePending();
}

void SchedulerController::OnNode(const Informer::Change& c) {
  // Heartbeats change a Node every second; only what placement reads matters.
  if (c.old && c.type != store::EventType::kDeleted) {
    NodeFacts now = NodeFactsOf(*c.object), before = NodeFactsOf(*c.old);
    if (now.ready == before.ready && now.unschedulable == before.unschedulable &&
        now.cpu_millicores == before.cpu_millicores && now.memory_bytes == before.memory_bytes &&
        now.sandboxes == before.sandboxes && now.runtime_classes == before.runtime_classes &&
        now.images == before.images) {
      return;
    }
  }
  RequeuePending();
}

void SchedulerController::RequeuePending() {
  std::vector<std::string> keys;
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, e] : entries_) {
      if (e.pending) keys.push_back(key);
    }
  }
  for (const auto& k : keys) queue_.Add(k);
}

void SchedulerController::Run() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      Log()->info("sandbox={} not placed yet, retrying: {}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status SchedulerController::Reconcile(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  ObjectPtr cached = sandboxes_.Get(ns, name);
  if (!cached || cached->metadata.deletion_timestamp) return Status::Ok();
  if (!StatusString(*cached, "nodeName").empty()) return Status::Ok();

  SandboxDemand demand;
  std::vector<PlacedSandbox> placed;
  {
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = assumed_.begin(); it != assumed_.end();) {
      it = it->second.until < now ? assumed_.erase(it) : std::next(it);
    }
    if (auto a = assumed_.find(key); a != assumed_.end() && a->second.uid == cached->metadata.uid) {
      return Status::Ok();  // written already; the cache has not caught up
    }
    auto e = entries_.find(key);
    if (e == entries_.end() || e->second.uid != cached->metadata.uid) return Status::Ok();
    RefreshDemandLocked(e->second, *cached);
    // A pool member's SandboxTemplate is written just before it, on another watch: give the
    // template cache a moment before placing by the defaults (the node then reports the
    // missing template itself).
    if (!e->second.resolved && std::as_const(*cached).spec().contains("templateRef") &&
        cached->metadata.creation_timestamp &&
        clock_.Now() - *cached->metadata.creation_timestamp < options_.template_wait) {
      return UnavailableError("its SandboxTemplate is not in the cache yet");
    }
    demand = e->second.placed.demand;
    for (const auto& [k, entry] : entries_) {
      if (entry.holds && !assumed_.contains(k)) placed.push_back(entry.placed);
    }
    for (const auto& [k, a] : assumed_) placed.push_back(a.placed);
  }
  // Outside the lock: a store read (rare, for sandboxes started from a checkpoint). Placed
  // once the checkpoint is done, where its images are; a failed or missing one is the node's
  // to report.
  if (auto from = cached->metadata.annotations.find(api::annotations::kRestoreFrom);
      from != cached->metadata.annotations.end()) {
    auto cp = store_.Get(api::CheckpointKind(), ns, from->second);
    if (cp.ok()) {
      auto st = api::DecodeStatus<api::CheckpointStatus>(*cp);
      const std::string phase = st.ok() ? st->phase : "";
      if (phase != "Succeeded" && phase != "Failed") {
        // Looked at again soon (checkpoints are not watched here): a capture takes seconds.
        queue_.AddAfter(key, std::chrono::milliseconds(500));
        return Status::Ok();
      }
      auto node = cp->metadata.annotations.find(api::kCheckpointNodeAnnotation);
      if (phase == "Succeeded" && node != cp->metadata.annotations.end())
        demand.node = node->second;
    } else if (cp.status().code() != StatusCode::kNotFound) {
      return cp.status();  // retried; placing it anywhere could start it without its images
    }
  }
  std::vector<NodeFacts> nodes;
  for (const auto& n : nodes_.List()) {
    if (!n->metadata.deletion_timestamp) nodes.push_back(NodeFactsOf(*n));
  }
  PlacementDecision decision = Place(demand, nodes, placed);

  api::Object obj = *cached;  // its resourceVersion is the write's precondition
  auto status = api::DecodeStatus<api::SandboxStatus>(obj);
  if (!status.ok()) return status.status();
  const base::WallTime now = clock_.Now();
  if (status->phase.empty()) status->phase = api::sandbox_phase::kPending;
  if (!decision.node.empty()) {
    status->node_name = decision.node;
    api::SetCondition(status->conditions,
                      {.type = scheduling::kConditionPodScheduled,
                       .status = "True",
                       .reason = scheduling::kReasonScheduled,
                       .message = fmt::format("placed on node {}", decision.node)},
                      now);
  } else {
    api::SetCondition(status->conditions,
                      {.type = scheduling::kConditionPodScheduled,
                       .status = "False",
                       .reason = scheduling::kReasonUnschedulable,
                       .message = decision.message},
                      now);
  }
  const api::Json before = obj.status();
  api::EncodeStatus(*status, obj);
  if (obj.status() != before) {
    auto written = store_.UpdateStatus(std::move(obj));
    if (!written.ok()) {
      // Gone: nothing to place. A conflict: the cache brings the newer version (requeued).
      if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
      return written.status();
    }
    obj = std::move(written).value();
  }
  if (!decision.node.empty()) {
    {
      std::lock_guard lock(mu_);
      // Unless the cache already shows the write (then the entry counts it).
      auto e = entries_.find(key);
      if (e == entries_.end() || e->second.uid != obj.metadata.uid ||
          e->second.placed.node.empty()) {
        assumed_[key] = Assumed{obj.metadata.uid, PlacedSandbox{decision.node, demand},
                                std::chrono::steady_clock::now() + options_.assume_ttl};
      }
    }
    Log()->info("sandbox={} placed node={}", key, decision.node);
    if (events_) {
      events_
          ->Normal(obj, scheduling::kReasonScheduled,
                   fmt::format("Successfully assigned {} to {}", key, decision.node))
          .IgnoreError();
    }
    return Status::Ok();
  }
  if (obj.status() != before) Log()->info("sandbox={} unschedulable: {}", key, decision.message);
  if (events_) {
    events_->Warning(obj, scheduling::kReasonFailedScheduling, decision.message).IgnoreError();
  }
  queue_.AddAfter(key, options_.unschedulable_retry);
  return Status::Ok();
}

}  // namespace warren::controller
