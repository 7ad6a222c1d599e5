#include "controller/advanced_cron_job_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <memory>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/advanced_cron_job.h"
#include "base/cron_schedule.h"
#include "base/log.h"
#include "base/time_format.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("advancedcronjob");
  return logger;
}

constexpr char kScheduledAt[] = "apps.kruise.io/scheduled-at";

std::string KeyOf(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

// The cron job that controls `child`, if any.
const api::OwnerReference* Controller(const api::Object& child) {
  for (const auto& r : child.metadata.owner_references) {
    if (r.controller && r.kind == "AdvancedCronJob") return &r;
  }
  return nullptr;
}

std::chrono::milliseconds Until(base::WallTime when, base::WallTime now) {
  auto d = std::chrono::duration_cast<std::chrono::milliseconds>(when - now);
  return std::max(d, std::chrono::milliseconds(0)) + std::chrono::milliseconds(5);
}

}  // namespace

AdvancedCronJobController::AdvancedCronJobController(store::Store& store, base::Clock& clock)
    : store_(store),
      clock_(clock),
      jobs_(store, {.kind = &api::AdvancedCronJobKind(), .name = "advancedcronjobs"}),
      children_(store, {.kind = &api::ImagePullJobKind(), .name = "advancedcronjob children"}) {
  jobs_.AddHandler([this](const Informer::Change& c) {
    if (c.type != store::EventType::kDeleted) queue_.Add(KeyOf(*c.object));
  });
  // A child finishing frees Forbid and feeds the history; its deletion changes nothing we keep.
  children_.AddHandler([this](const Informer::Change& c) {
    if (c.type == store::EventType::kDeleted) return;
    if (const auto* owner = Controller(*c.object)) {
      queue_.Add(fmt::format("{}/{}", c.object->metadata.namespace_, owner->name));
    }
  });
}

AdvancedCronJobController::~AdvancedCronJobController() { Stop(); }

Status AdvancedCronJobController::Start() {
  RETURN_IF_ERROR(children_.Start());
  RETURN_IF_ERROR(jobs_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void AdvancedCronJobController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  jobs_.Stop();
  children_.Stop();
}

void AdvancedCronJobController::Resync() {
  for (const auto& j : jobs_.List()) queue_.Add(KeyOf(*j));
}

void AdvancedCronJobController::Run() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      Log()->warn("cron job={} reconcile failed, retrying: {}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status AdvancedCronJobController::Reconcile(const std::string& key) {
  // Named references, not a structured binding: clang 14 cannot capture a binding in a lambda.
  const auto key_parts = api::SplitKey(key);
  const std::string& ns = key_parts.first;
  const std::string& name = key_parts.second;
  auto got = store_.Get(api::AdvancedCronJobKind(), ns, name);
  if (!got.ok()) return got.status().code() == StatusCode::kNotFound ? Status::Ok() : got.status();
  api::Object cron = std::move(got).value();
  if (cron.metadata.deletion_timestamp) return Status::Ok();
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::AdvancedCronJobSpec>(cron));
  ASSIGN_OR_RETURN(auto status, api::DecodeStatus<api::AdvancedCronJobStatus>(cron));
  const auto old = status;
  const base::WallTime now = clock_.Now();
  const bool pulls = spec.template_.image_pull_job_template.has_value();
  status.type = pulls ? "ImagePullJob" : "SandboxSetReplicas";

  // Children: unfinished ones are active; finished ones beyond the limits go, oldest first.
  std::vector<ObjectPtr> children = children_.List();
  // A child this controller created a moment ago may not have reached the informer yet: read
  // those the stored status names from the store, or Replace and Forbid would not see them.
  for (const auto& name : status.active) {
    if (children_.Get(ns, name) != nullptr) continue;
    auto fresh = store_.Get(api::ImagePullJobKind(), ns, name);
    if (fresh.ok()) {
      children.push_back(std::make_shared<const api::Object>(std::move(fresh).value()));
    } else if (fresh.status().code() != StatusCode::kNotFound) {
      return fresh.status();
    }
  }
  std::vector<ObjectPtr> active, succeeded, failed;
  for (const auto& child : children) {
    const auto* owner = Controller(*child);
    if (child->metadata.namespace_ != ns || owner == nullptr || owner->uid != cron.metadata.uid ||
        child->metadata.deletion_timestamp) {
      continue;
    }
    auto st = api::DecodeStatus<api::ImagePullJobStatus>(*child);
    if (!st.ok() || !st->completion_time) {
      active.push_back(child);
    } else {
      (st->failed == 0 ? succeeded : failed).push_back(child);
    }
  }
  auto by_age = [](const ObjectPtr& a, const ObjectPtr& b) {
    return a->metadata.name < b->metadata.name;  // <cron>-<unix seconds>: oldest first
  };
  auto trim = [&](std::vector<ObjectPtr>& finished, int32_t keep) -> Status {
    std::sort(finished.begin(), finished.end(), by_age);
    for (size_t i = 0; i + static_cast<size_t>(std::max(0, keep)) < finished.size(); ++i) {
      auto d = store_.Delete(api::ImagePullJobKind(), ns, finished[i]->metadata.name);
      if (!d.ok() && d.status().code() != StatusCode::kNotFound) return d.status();
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(trim(succeeded, spec.successful_jobs_history_limit.value_or(3)));
  RETURN_IF_ERROR(trim(failed, spec.failed_jobs_history_limit.value_or(1)));
  std::sort(active.begin(), active.end(), by_age);
  status.active.clear();
  for (const auto& a : active) status.active.push_back(a->metadata.name);

  auto write = [&]() -> Status {
    api::Object before = cron;
    api::EncodeStatus(old, before);
    api::EncodeStatus(status, cron);
    if (cron.status() == before.status()) return Status::Ok();
    auto w = store_.Update(cron, store::Subresource::kStatus);
    if (!w.ok() && w.status().code() != StatusCode::kNotFound) return w.status();
    return Status::Ok();
  };
  if (spec.paused) {
    status.message = "paused";
    return write();
  }
  ASSIGN_OR_RETURN(base::CronSchedule schedule,
                   base::CronSchedule::Parse(spec.schedule, spec.time_zone.value_or("")));
  base::WallTime since =
      status.last_schedule_time.value_or(cron.metadata.creation_timestamp.value_or(now));
  if (spec.starting_deadline_seconds) {
    since = std::max(since, now - std::chrono::seconds(*spec.starting_deadline_seconds));
  }
  std::optional<base::WallTime> missed = schedule.LastFiringIn(since, now);
  if (auto next = schedule.Next(now)) queue_.AddAfter(key, Until(*next, now));
  if (!missed) return write();
  const std::string at = base::FormatRfc3339(*missed);

  if (pulls) {
    if (!active.empty() && spec.concurrency_policy == "Forbid") {
      status.message = fmt::format("the firing of {} waits: {} is still running", at,
                                   active.front()->metadata.name);
      // Due again once the child finishes (its events requeue us), within the deadline.
      return write();
    }
    if (!active.empty() && spec.concurrency_policy == "Replace") {
      for (const auto& a : active) {
        auto d = store_.Delete(api::ImagePullJobKind(), ns, a->metadata.name);
        if (!d.ok() && d.status().code() != StatusCode::kNotFound) return d.status();
        Log()->info("cron job={} replaced unfinished {}", key, a->metadata.name);
      }
      status.active.clear();
    }
    const auto& tpl = *spec.template_.image_pull_job_template;
    api::Object child;
    child.api_version = api::kAppsApiVersion;
    child.kind = "ImagePullJob";
    child.metadata.namespace_ = ns;
    child.metadata.name = fmt::format(
        "{}-{}", name,
        std::chrono::duration_cast<std::chrono::seconds>(missed->time_since_epoch()).count());
    child.metadata.labels = tpl.metadata.labels;
    child.metadata.annotations = tpl.metadata.annotations;
    child.metadata.annotations[kScheduledAt] = at;
    child.metadata.owner_references.push_back({.api_version = cron.api_version,
                                               .kind = cron.kind,
                                               .name = name,
                                               .uid = cron.metadata.uid,
                                               .controller = true,
                                               .block_owner_deletion = true});
    api::EncodeSpec(tpl.spec, child);
    auto created = store_.Create(child);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) {
      return created.status();
    }
    // Already there: an earlier pass made it and could not record it (its status write
    // failed). It is this firing's child when it is ours; recorded, Replace and Forbid see it.
    bool ours = created.ok();
    if (!ours) {
      auto existing = store_.Get(api::ImagePullJobKind(), ns, child.metadata.name);
      if (!existing.ok() && existing.status().code() != StatusCode::kNotFound) {
        return existing.status();
      }
      const auto* owner = existing.ok() ? Controller(*existing) : nullptr;
      ours = owner != nullptr && owner->uid == cron.metadata.uid &&
             !existing->metadata.deletion_timestamp;
    }
    if (ours && std::find(status.active.begin(), status.active.end(), child.metadata.name) ==
                    status.active.end()) {
      status.active.push_back(child.metadata.name);
    }
    status.message = fmt::format("fired at {}: ImagePullJob {}", at, child.metadata.name);
  } else {
    const auto& tpl = *spec.template_.sandbox_set_replicas_template;
    auto patched = store_.Patch(api::SandboxSetKind(), ns, tpl.name,
                                {{"spec", {{"replicas", tpl.replicas.value_or(0)}}}});
    if (!patched.ok()) {
      if (patched.status().code() != StatusCode::kNotFound) return patched.status();
      status.message = fmt::format("fired at {}: SandboxSet {} not found", at, tpl.name);
    } else {
      status.message = fmt::format("fired at {}: SandboxSet {} replicas {}", at, tpl.name,
                                   tpl.replicas.value_or(0));
    }
  }
  status.last_schedule_time = *missed;
  Log()->info("cron job={} {}", key, status.message);
  return write();
}

}  // namespace warren::controller
