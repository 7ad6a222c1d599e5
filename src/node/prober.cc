#include "node/prober.h"

#include <fmt/format.h>

#include "base/log.h"

namespace warren::node {
namespace {

auto Log() { return base::Logger("node"); }

std::string KindName(const ProbeConfig::Entry& e) {
  return e.kind ? std::string(ContainerProbeName(*e.kind)) : e.name;
}

}  // namespace

Prober::Prober(base::Clock& clock, int threads, TargetFn target, Notify notify)
    : clock_(clock), threads_(threads), target_(std::move(target)), notify_(std::move(notify)) {}

Prober::~Prober() { Stop(); }

void Prober::Start() {
  for (int i = 0; i < threads_; ++i) workers_.emplace_back([this] { Worker(); });
}

void Prober::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
  workers_.clear();
}

void Prober::ScheduleAll(const std::string& id, const Sandbox& s, bool now) {
  const base::MonoTime t = clock_.Monotonic();
  for (size_t i = 0; i < s.config.entries.size(); ++i) {
    const auto delay =
        now ? std::chrono::seconds(0)
            : std::chrono::seconds(s.config.entries[i].timings.initial_delay_seconds);
    heap_.push(Due{t + delay, id, i, s.generation});
  }
  wake_.notify_all();
}

void Prober::Track(const std::string& sandbox_id, const std::string& key, ProbeConfig config) {
  std::lock_guard lock(mu_);
  Sandbox s{.key = key,
            .config = config,
            .container = ContainerProbeState(config.startup, config.readiness, config.liveness)};
  if (config.idle) s.idle.emplace(config.idle->message_regex, config.idle->threshold);
  s.generation = next_generation_++;
  auto [it, _] = sandboxes_.insert_or_assign(sandbox_id, std::move(s));
  ScheduleAll(sandbox_id, it->second, /*now=*/false);
}

void Prober::Suspend(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end() || it->second.suspended) return;
  it->second.suspended = true;
  it->second.generation = next_generation_++;  // what is in the heap or in flight is stale
  if (it->second.idle) it->second.idle->Reset();
}

void Prober::Continue(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end() || !it->second.suspended) return;
  it->second.suspended = false;
  it->second.pause_asked = false;
  it->second.pause.reset();
  ScheduleAll(sandbox_id, it->second, /*now=*/true);
}

void Prober::Forget(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  sandboxes_.erase(sandbox_id);  // heap entries of it find nothing and are dropped
}

ProbeView Prober::View(const std::string& sandbox_id) const {
  ProbeView v;
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return v;
  const Sandbox& s = it->second;
  v.tracked = true;
  v.ready = s.container.Ready();
  if (!v.ready) std::tie(v.not_ready_reason, v.not_ready_message) = s.container.NotReadyWhy();
  for (const ProbeConfig::Entry& e : s.config.entries) {
    if (e.kind) continue;
    auto p = s.probes.find(e.name);
    if (p == s.probes.end() || !p->second.report().reported) continue;
    const SandboxProbeReport& r = p->second.report();
    v.conditions.push_back(api::Condition{
        api::SandboxProbeConditionType(e.name), r.ok ? "True" : "False",
        r.ok ? probe_reasons::kProbeSucceeded : probe_reasons::kProbeFailed, r.message});
  }
  if (s.config.has_sandbox_probes) {
    v.conditions.push_back(api::Condition{
        api::kProbeValidCondition, s.config.invalid.empty() ? "True" : "False",
        s.config.invalid.empty() ? probe_reasons::kProbesValid : probe_reasons::kInvalidProbe,
        s.config.invalid});
  }
  return v;
}

std::optional<std::string> Prober::TakeKill(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return std::nullopt;
  return std::exchange(it->second.kill, std::nullopt);
}

std::vector<std::string> Prober::TakeWarnings(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return {};
  return std::exchange(it->second.warnings, {});
}

std::optional<std::string> Prober::TakePause(const std::string& sandbox_id) {
  std::lock_guard lock(mu_);
  auto it = sandboxes_.find(sandbox_id);
  if (it == sandboxes_.end()) return std::nullopt;
  return std::exchange(it->second.pause, std::nullopt);
}

uint64_t Prober::runs() const {
  std::lock_guard lock(mu_);
  return runs_;
}

bool Prober::Record(Sandbox& s, const ProbeConfig::Entry& entry, const ProbeOutcome& outcome) {
  if (entry.kind) {
    const bool was_killed = s.container.killed();
    const ContainerProbeState::Change change = s.container.Record(*entry.kind, outcome);
    if (change.kill && !was_killed) s.kill = s.container.kill_message();
    if (change.ready_changed && !s.container.Ready() && !s.container.killed()) {
      s.warnings.push_back(s.container.NotReadyWhy().second);  // was Ready, is not any more
    }
    return change.kill || change.ready_changed || change.message_changed;
  }
  auto state = s.probes.find(entry.name);
  if (state == s.probes.end()) {
    state = s.probes.emplace(entry.name, SandboxProbeState(entry.timings)).first;
  }
  bool look = state->second.Record(outcome);
  const SandboxProbeReport& report = state->second.report();
  if (s.idle && s.config.idle && s.config.idle->probe == entry.name && !s.pause_asked &&
      s.idle->Observe(report, clock_.Monotonic())) {
    s.pause_asked = true;
    s.pause = fmt::format(
        "auto-paused: probe {} reported idle (\"{}\") for {}s", entry.name, report.message,
        std::chrono::duration_cast<std::chrono::seconds>(s.idle->threshold()).count());
    look = true;
  }
  return look;
}

void Prober::Worker() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (heap_.empty()) {
      wake_.wait(lock);
      continue;
    }
    const base::MonoTime now = clock_.Monotonic();
    if (heap_.top().at > now) {
      wake_.wait_for(lock, heap_.top().at - now);
      continue;
    }
    Due due = heap_.top();
    heap_.pop();
    auto it = sandboxes_.find(due.sandbox_id);
    if (it == sandboxes_.end() || it->second.generation != due.generation || it->second.suspended) {
      continue;  // forgotten, restarted or paused since it was scheduled
    }
    const ProbeConfig::Entry entry = it->second.config.entries[due.entry];
    if (entry.kind && !it->second.container.Runs(*entry.kind)) {
      // Gated (readiness and liveness wait for startup: looked at again a period later), or
      // over (killed, or a startup probe that passed): dropped.
      const bool over =
          it->second.container.killed() ||
          (*entry.kind == ContainerProbeKind::kStartup && it->second.container.started());
      if (!over) {
        heap_.push(Due{now + std::chrono::seconds(entry.timings.period_seconds), due.sandbox_id,
                       due.entry, due.generation});
      }
      continue;
    }
    lock.unlock();
    const ProbeOutcome outcome = RunProbe(entry.action, target_(due.sandbox_id));
    lock.lock();
    ++runs_;
    it = sandboxes_.find(due.sandbox_id);
    if (it == sandboxes_.end() || it->second.generation != due.generation || it->second.suspended) {
      continue;
    }
    Sandbox& s = it->second;
    const bool was_started = s.container.started();
    const bool look = Record(s, entry, outcome);
    if (!outcome.success) {
      Log()->debug("probe failed id={} probe={} output=\"{}\"", due.sandbox_id, KindName(entry),
                   outcome.output);
    }
    if (!was_started && s.container.started()) {
      // Startup passed: readiness and liveness start now, not a period later (a new generation,
      // so the runs they had waiting are dropped).
      s.generation = next_generation_++;
      ScheduleAll(due.sandbox_id, s, /*now=*/true);
    } else if (!s.container.killed() || !entry.kind) {
      // The next run a period after this one was due, or at once when it overran its period.
      const base::MonoTime next =
          std::max(due.at + std::chrono::seconds(entry.timings.period_seconds), clock_.Monotonic());
      heap_.push(Due{next, due.sandbox_id, due.entry, due.generation});
    }
    wake_.notify_one();
    if (look) {
      const std::string key = s.key;
      lock.unlock();
      notify_(key);
      lock.lock();
    }
  }
}

}  // namespace warren::node
