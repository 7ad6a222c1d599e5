#include "controller/pool_hibernator.h"

#include <fmt/format.h>

#include "api/object.h"
#include "base/log.h"
#include "controller/sandboxset_member.h"

namespace warren::controller {
namespace {

// An unclaimed member that should be paused when it has been available this long; 0: never.
std::chrono::seconds IdleLimit(const api::Object& sandbox) {
  if (SetOwnerUid(sandbox) == nullptr || ClassifyMember(sandbox) != MemberState::kAvailable) {
    return std::chrono::seconds(0);
  }
  return std::chrono::seconds(IdlePauseSeconds(sandbox));
}

}  // namespace

PoolHibernator::PoolHibernator(PoolInformers& informers, obs::EventRecorder* events)
    : informers_(informers), store_(informers.store()), events_(events) {
  informers_.sandboxes().AddHandler([this](const Informer::Change& c) { OnSandbox(c); });
}

PoolHibernator::~PoolHibernator() { Stop(); }

void PoolHibernator::OnSandbox(const Informer::Change& c) {
  std::string key = c.object->Key();
  auto limit =
      c.type == store::EventType::kDeleted ? std::chrono::seconds(0) : IdleLimit(*c.object);
  std::lock_guard lock(mu_);
  if (limit.count() == 0) {
    idle_since_.erase(key);
    return;
  }
  auto since = idle_since_.try_emplace(key, Steady::now()).first->second;
  auto due = std::chrono::ceil<std::chrono::milliseconds>(since + limit - Steady::now());
  queue_.AddAfter(key, std::max(due, std::chrono::milliseconds(0)));
}

Status PoolHibernator::Start() {
  worker_ = std::thread([this] { Worker(); });
  return Status::Ok();
}

void PoolHibernator::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
}

void PoolHibernator::Worker() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      base::Logger("controller")
          ->warn("pool hibernator: pausing an idle member failed key={} error={}", *key,
                 s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status PoolHibernator::Reconcile(const std::string& key) {
  auto [ns, name] = api::SplitKey(key);
  ObjectPtr member = informers_.sandboxes().Get(ns, name);
  if (!member) return Status::Ok();
  auto limit = IdleLimit(*member);
  if (limit.count() == 0) return Status::Ok();
  Steady::time_point since;
  {
    std::lock_guard lock(mu_);
    auto it = idle_since_.find(key);
    if (it == idle_since_.end()) return Status::Ok();  // no longer idle: its change said so
    since = it->second;
  }
  if (auto left = since + limit - Steady::now(); left > Steady::duration::zero()) {
    queue_.AddAfter(key, std::chrono::ceil<std::chrono::milliseconds>(left));
    return Status::Ok();
  }
  api::Object paused = *member;
  paused.spec()["paused"] = true;
  auto written = store_.Update(std::move(paused));
  if (!written.ok()) {
    StatusCode code = written.status().code();
    // Claimed, deleted or otherwise changed first: that version's change decides again.
    if (code == StatusCode::kAborted || code == StatusCode::kNotFound) return Status::Ok();
    return written.status();
  }
  base::Logger("controller")
      ->info("idle pool member paused sandbox={} pool={} idle_seconds={}", key, PoolOf(*member),
             limit.count());
  if (events_) {
    events_
        ->Normal(*written, "IdlePaused",
                 fmt::format("paused after {} s unclaimed in pool {} (spec.pauseStrategy."
                             "idleSeconds); a claim wakes it",
                             limit.count(), PoolOf(*member)))
        .IgnoreError();
  }
  return Status::Ok();
}

}  // namespace warren::controller
