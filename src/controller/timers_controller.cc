#include "controller/timers_controller.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "base/log.h"
#include "base/time_format.h"

namespace warren::controller {
namespace {

constexpr int kMaxConflictRetries = 5;

std::shared_ptr<spdlog::logger> Log() { return base::Logger("timers"); }

}  // namespace

TimersController::TimersController(store::Store& store, base::Clock& clock, TimersOptions options)
    : store_(store), clock_(clock), options_(options) {}

TimersController::~TimersController() { Stop(); }

Status TimersController::Start() {
  ASSIGN_OR_RETURN(auto list, store_.List(api::SandboxKind(), {}));
  {
    std::lock_guard lock(mu_);
    for (const auto& o : list.items) Track(o);
  }
  store::WatchOptions options;
  options.resource_version = list.resource_version;
  store::WatchSink sink;
  sink.on_event = [this](const store::WatchEvent& e) { OnEvent(e); };
  sink.on_close = [](const Status& s) {
    // Only at shutdown or when history was lost; the next server start lists again.
    Log()->warn("timers watch ended error={}", s.ToString());
  };
  ASSIGN_OR_RETURN(subscription_, store_.Subscribe(&api::SandboxKind(), options, std::move(sink)));
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void TimersController::Stop() {
  if (subscription_) subscription_->Cancel();
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (worker_.joinable()) worker_.join();
}

void TimersController::Kick() {
  {
    std::lock_guard lock(mu_);
    kicked_ = true;
  }
  wake_.notify_all();
}

TimersStats TimersController::Stats() const {
  std::lock_guard lock(mu_);
  TimersStats s = stats_;
  s.pending = 0;
  for (const auto& [key, t] : timers_) s.pending += (t.shutdown || t.pause) ? 1 : 0;
  return s;
}

void TimersController::Track(const api::Object& o) {
  Key key{o.metadata.namespace_, o.metadata.name};
  auto spec = api::DecodeSpec<api::SandboxSpec>(o);
  if (o.metadata.deletion_timestamp || !spec.ok() ||
      (!spec->shutdown_time && !(spec->pause_time && !spec->paused))) {
    if (auto it = timers_.find(key); it != timers_.end()) Untrack(it);
    return;
  }
  Timers& t = timers_[key];
  if (t.uid != o.metadata.uid) t = Timers{.queued = t.queued};
  t.uid = o.metadata.uid;
  t.shutdown = spec->shutdown_time;
  t.pause = spec->paused ? std::nullopt : spec->pause_time;
  Requeue(key, t);
}

void TimersController::Requeue(const Key& key, Timers& t) {
  std::optional<base::WallTime> due;
  for (const auto& when : {t.shutdown, t.pause}) {
    if (when && (!due || *when < *due)) due = *when;
  }
  if (due) due = std::max(*due, t.not_before);
  if (due == t.queued) return;
  if (t.queued) due_.erase({*t.queued, key});
  if (due) due_.emplace(*due, key);
  t.queued = due;
}

void TimersController::Untrack(std::map<Key, Timers>::iterator it) {
  if (it->second.queued) due_.erase({*it->second.queued, it->first});
  timers_.erase(it);
}

void TimersController::OnEvent(const store::WatchEvent& event) {
  {
    std::lock_guard lock(mu_);
    const std::optional<base::WallTime> before = NextDueLocked();
    const api::Object& o = *event.object;
    if (event.type == store::EventType::kDeleted) {
      auto it = timers_.find({o.metadata.namespace_, o.metadata.name});
      if (it != timers_.end() && it->second.uid == o.metadata.uid) Untrack(it);
    } else {
      Track(o);
    }
    // The worker sleeps until the earliest due time: only an earlier one needs it awake now (a
    // later head just finds nothing due when it wakes). Most events, a claim's among them,
    // change no timer or set one later than the head.
    const std::optional<base::WallTime> after = NextDueLocked();
    if (!after || (before && *after >= *before)) return;
    kicked_ = true;
  }
  wake_.notify_all();
}

std::optional<base::WallTime> TimersController::NextDueLocked() const {
  if (due_.empty()) return std::nullopt;
  return due_.begin()->first;
}

bool TimersController::Fire(const Key& key, const std::string& uid) {
  const auto& [ns, name] = key;
  for (int attempt = 0; attempt < kMaxConflictRetries; ++attempt) {
    auto got = store_.Get(api::SandboxKind(), ns, name);
    if (!got.ok()) return got.status().code() == StatusCode::kNotFound;
    api::Object o = std::move(*got);
    if (o.metadata.uid != uid || o.metadata.deletion_timestamp) return true;
    auto spec = api::DecodeSpec<api::SandboxSpec>(o);
    if (!spec.ok()) return true;  // admission keeps specs valid; nothing to act on
    base::WallTime now = clock_.Now();
    Status s;
    if (spec->shutdown_time && *spec->shutdown_time <= now) {
      store::DeleteOptions options;
      options.preconditions.uid = uid;
      options.preconditions.resource_version = o.metadata.resource_version;
      auto deleted = store_.Delete(api::SandboxKind(), ns, name, options);
      if (deleted.ok() || deleted.status().code() == StatusCode::kNotFound) {
        Log()->info("shutdownTime reached, sandbox deleted name={}/{} at={}", ns, name,
                    base::FormatRfc3339(*spec->shutdown_time));
        std::lock_guard lock(mu_);
        ++stats_.deleted;
        return true;
      }
      s = deleted.status();
    } else if (spec->pause_time && !spec->paused && *spec->pause_time <= now) {
      base::WallTime at = *spec->pause_time;
      spec->paused = true;
      spec->pause_time.reset();
      api::EncodeSpec(*spec, o);
      auto updated = store_.Update(std::move(o));
      if (updated.ok()) {
        Log()->info("pauseTime reached, sandbox paused name={}/{} at={}", ns, name,
                    base::FormatRfc3339(at));
        std::lock_guard lock(mu_);
        ++stats_.paused;
        return true;
      }
      s = updated.status();
    } else {
      return true;  // extended or cleared meanwhile
    }
    if (s.code() != StatusCode::kAborted) {
      Log()->warn("timer write failed name={}/{} error={}", ns, name, s.ToString());
      return false;
    }
  }
  return false;
}

void TimersController::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    base::WallTime now = clock_.Now();
    // Everything due now, then act without the lock (writes block).
    std::vector<std::pair<Key, Timers>> due;
    for (auto it = due_.begin(); it != due_.end() && it->first <= now; ++it) {
      due.emplace_back(it->second, timers_.at(it->second));
    }
    if (!due.empty()) {
      lock.unlock();
      std::vector<std::pair<Key, bool>> results;
      for (const auto& [key, t] : due) results.emplace_back(key, Fire(key, t.uid));
      lock.lock();
      for (size_t i = 0; i < due.size(); ++i) {
        auto it = timers_.find(due[i].first);
        if (it == timers_.end() || it->second.uid != due[i].second.uid) continue;
        Timers& t = it->second;
        if (results[i].second) {
          // Done: drop what fired unless an event already replaced it with a newer value.
          if (t.shutdown == due[i].second.shutdown && t.shutdown && *t.shutdown <= now) {
            t.shutdown.reset();
          }
          if (t.pause == due[i].second.pause && t.pause && *t.pause <= now) t.pause.reset();
          if (!t.shutdown && !t.pause) {
            Untrack(it);
            continue;
          }
        } else {
          ++stats_.failures;
          t.not_before = clock_.Now() + options_.retry_delay;
        }
        Requeue(it->first, t);
      }
      continue;
    }
    auto next = NextDueLocked();
    auto sleep = options_.max_sleep;
    if (next) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now) +
                   std::chrono::milliseconds(1);
      sleep = std::clamp(until, std::chrono::milliseconds(1), options_.max_sleep);
    }
    wake_.wait_for(lock, sleep, [this] { return stopping_ || kicked_; });
    kicked_ = false;
  }
}

}  // namespace warren::controller
