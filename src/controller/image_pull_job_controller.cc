#include "controller/image_pull_job_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/image_pull_job.h"
#include "api/types/sandbox.h"
#include "base/log.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("imagepulljob");
  return logger;
}

std::string KeyOf(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

}  // namespace

ImagePullJobController::ImagePullJobController(store::Store& store, base::Clock& clock)
    : store_(store),
      clock_(clock),
      jobs_(store, {.kind = &api::ImagePullJobKind(), .name = "imagepulljobs"}),
      nodes_(store, {.kind = &api::NodeKind(), .name = "imagepulljob nodes"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "imagepulljob sandboxes"}) {
  jobs_.AddHandler([this](const Informer::Change& c) {
    if (c.type != store::EventType::kDeleted) queue_.Add(KeyOf(*c.object));
  });
  // A node appearing or changing labels may be a new target of any unfinished job.
  nodes_.AddHandler([this](const Informer::Change& c) {
    if (c.old && c.old->metadata.labels == c.object->metadata.labels) return;
    for (const auto& j : jobs_.List()) queue_.Add(KeyOf(*j));
  });
  sandboxes_.AddHandler([this](const Informer::Change& c) {
    for (const auto& j : jobs_.List()) {
      if (j->metadata.namespace_ == c.object->metadata.namespace_ &&
          j->spec().contains("podSelector")) {
        queue_.Add(KeyOf(*j));
      }
    }
  });
}

ImagePullJobController::~ImagePullJobController() { Stop(); }

Status ImagePullJobController::Start() {
  RETURN_IF_ERROR(nodes_.Start());
  RETURN_IF_ERROR(sandboxes_.Start());
  RETURN_IF_ERROR(jobs_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void ImagePullJobController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  jobs_.Stop();
  nodes_.Stop();
  sandboxes_.Stop();
}

void ImagePullJobController::Run() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      Log()->warn("job={} reconcile failed, retrying: {}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status ImagePullJobController::Reconcile(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  auto got = store_.Get(api::ImagePullJobKind(), ns, name);
  if (!got.ok()) return got.status().code() == StatusCode::kNotFound ? Status::Ok() : got.status();
  api::Object job = std::move(got).value();
  if (job.metadata.deletion_timestamp) return Status::Ok();
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::ImagePullJobSpec>(job));
  ASSIGN_OR_RETURN(auto status, api::DecodeStatus<api::ImagePullJobStatus>(job));
  const auto old = status;
  const base::WallTime now = clock_.Now();
  const auto& policy = spec.completion_policy;

  if (status.completion_time) {
    if (!policy.ttl_seconds_after_finished) return Status::Ok();
    auto expires =
        *status.completion_time + std::chrono::seconds(*policy.ttl_seconds_after_finished);
    if (now < expires) {
      queue_.AddAfter(key, std::chrono::duration_cast<std::chrono::milliseconds>(expires - now) +
                               std::chrono::milliseconds(10));
      return Status::Ok();
    }
    Log()->info("job={} deleted: ttlSecondsAfterFinished passed", key);
    auto deleted = store_.Delete(api::ImagePullJobKind(), ns, name,
                                 {.preconditions = {.uid = job.metadata.uid}});
    if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) return deleted.status();
    return Status::Ok();
  }

  // Targets: what the selectors pick now, plus every node that already has an entry.
  std::set<std::string> targets(status.target_nodes.begin(), status.target_nodes.end());
  for (const auto& n : status.nodes) targets.insert(n.name);
  if (spec.selector && !spec.selector->names.empty()) {
    for (const auto& n : spec.selector->names) {
      if (nodes_.Get("", n)) targets.insert(n);
    }
  } else if (spec.pod_selector) {
    ASSIGN_OR_RETURN(api::LabelSelector sel,
                     api::ToLabelSelector(*spec.pod_selector, "spec.podSelector"));
    for (const auto& s : sandboxes_.List()) {
      if (s->metadata.namespace_ != ns || !sel.Matches(s->metadata.labels)) continue;
      auto st = api::DecodeStatus<api::SandboxStatus>(*s);
      if (st.ok() && !st->node_name.empty()) targets.insert(st->node_name);
    }
  } else {
    api::LabelSelector sel;
    if (spec.selector) {
      ASSIGN_OR_RETURN(
          sel, api::ToLabelSelector({spec.selector->match_labels, spec.selector->match_expressions},
                                    "spec.selector"));
    }
    for (const auto& n : nodes_.List()) {
      if (!n->metadata.deletion_timestamp && sel.Matches(n->metadata.labels)) {
        targets.insert(n->metadata.name);
      }
    }
  }
  status.target_nodes.assign(targets.begin(), targets.end());
  if (!status.start_time) status.start_time = now;

  status.desired = static_cast<int32_t>(targets.size());
  status.active = status.succeeded = status.failed = 0;
  status.failed_nodes.clear();
  std::set<std::string> finished;
  int64_t percent_sum = 0;
  for (const auto& n : status.nodes) {
    if (!targets.contains(n.name)) continue;
    percent_sum += n.phase == "Pulling" ? std::clamp(n.progress, 0, 100) : 100;
    if (n.phase == "Succeeded") {
      ++status.succeeded;
      finished.insert(n.name);
    } else if (n.phase == "Failed") {
      ++status.failed;
      status.failed_nodes.push_back(n.name);
      finished.insert(n.name);
    } else if (n.phase == "Pulling") {
      ++status.active;
    }
  }
  status.progress = targets.empty()
                        ? 100
                        : static_cast<int32_t>(percent_sum / static_cast<int64_t>(targets.size()));
  const bool always = policy.type != "Never";
  bool past_deadline = false;
  std::optional<base::WallTime> deadline;
  if (always && policy.active_deadline_seconds) {
    deadline = *status.start_time + std::chrono::seconds(*policy.active_deadline_seconds);
    past_deadline = now >= *deadline;
  }
  if (past_deadline) {
    for (const auto& t : targets) {
      if (finished.contains(t)) continue;
      ++status.failed;
      status.failed_nodes.push_back(t);
    }
    status.active = 0;
    status.completion_time = now;
    status.message = "job exceeds activeDeadlineSeconds";
  } else if (always && status.desired - status.succeeded - status.failed == 0) {
    status.completion_time = now;
    status.message = "job has completed";
  } else if (status.succeeded + status.failed == 0) {
    status.message = "job is running, no progress";
  } else {
    status.message = fmt::format("job is running, progress {:.1f}%",
                                 100.0 * (status.succeeded + status.failed) / status.desired);
  }
  std::sort(status.failed_nodes.begin(), status.failed_nodes.end());

  if (!status.completion_time && deadline) {
    queue_.AddAfter(key, std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - now) +
                             std::chrono::milliseconds(10));
  }
  if (status.completion_time && policy.ttl_seconds_after_finished) queue_.Add(key);
  api::Object before = job;
  api::EncodeStatus(old, before);
  api::EncodeStatus(status, job);
  if (job.status() == before.status()) return Status::Ok();
  auto written = store_.Update(job, store::Subresource::kStatus);
  if (!written.ok()) {
    if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
    return written.status();  // a conflict with a node's write: again, from the new state
  }
  if (status.completion_time) {
    Log()->info("job={} finished desired={} succeeded={} failed={} message=\"{}\"", key,
                status.desired, status.succeeded, status.failed, status.message);
  }
  return Status::Ok();
}

}  // namespace warren::controller
