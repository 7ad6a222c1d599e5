#include "server/e2b/team_metrics.h"

#include "api/kinds.h"
#include "server/e2b/sandbox_record.h"

namespace warren::server::e2b {
namespace {

// What a change says of a sandbox: whether it is running and shown through E2B (what
// concurrentSandboxes counts) and whether it is an unclaimed pool member. One decode per event.
struct Seen {
  bool running = false;
  bool pool_member = false;
};
Seen SeenIn(const controller::Informer::Change& change) {
  if (change.type == store::EventType::kDeleted) return {};
  auto r = RecordFromObject(*change.object);
  if (!r.ok()) return {};
  return {!change.object->metadata.deletion_timestamp && !r->pool_member &&
              r->state == E2bState::kRunning,
          r->pool_member};
}

}  // namespace

TeamMetrics::TeamMetrics(store::Store& store, base::Clock& clock, Options options)
    : clock_(clock),
      options_(options),
      informer_(store, controller::Informer::Options{.kind = &api::SandboxKind(),
                                                     .name = "team-metrics"}) {
  informer_.AddHandler([this](const controller::Informer::Change& c) { OnChange(c); });
}

TeamMetrics::~TeamMetrics() { Stop(); }

Status TeamMetrics::Start() {
  {
    std::lock_guard lock(mu_);
    last_sample_ = clock_.Now();
  }
  listing_ = true;  // Start runs the handler for the listed objects on this thread
  Status started = informer_.Start();
  listing_ = false;
  RETURN_IF_ERROR(started);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void TeamMetrics::Stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  informer_.Stop();
}

void TeamMetrics::OnChange(const controller::Informer::Change& change) {
  const api::Object& o = *change.object;
  const auto [running, pool_member] = SeenIn(change);
  std::lock_guard lock(mu_);
  // The same name with a new uid (deleted and made again while the watch was down): the old
  // one is gone.
  if (change.old != nullptr && change.old->metadata.uid != o.metadata.uid) {
    if (auto gone = tracked_.find(change.old->metadata.uid); gone != tracked_.end()) {
      if (gone->second.running) --teams_[gone->second.namespace_].running;
      tracked_.erase(gone);
    }
  }
  auto it = tracked_.find(o.metadata.uid);
  if (it != tracked_.end() && it->second.running) --teams_[it->second.namespace_].running;
  if (change.type == store::EventType::kDeleted) {
    if (it != tracked_.end()) tracked_.erase(it);
    return;
  }
  if (running) {
    Team& team = teams_[o.metadata.namespace_];
    ++team.running;
    // What the first list finds running started before this server did.
    if (!listing_ && (it == tracked_.end() || !it->second.started)) ++team.starts;
  }
  Tracked& t = tracked_[o.metadata.uid];
  t.namespace_ = o.metadata.namespace_;
  t.running = running;
  // A recycled member back in its pool starts again at its next claim.
  t.started = !pool_member && (t.started || running);
}

void TeamMetrics::SampleNow() {
  std::lock_guard lock(mu_);
  const base::WallTime now = clock_.Now();
  const double seconds = std::max(0.001, std::chrono::duration<double>(now - last_sample_).count());
  last_sample_ = now;
  for (auto& [name, team] : teams_) {
    team.samples.push_back(Sample{now, team.running, static_cast<double>(team.starts) / seconds});
    team.starts = 0;
    while (team.samples.size() > options_.capacity) team.samples.pop_front();
  }
}

std::vector<TeamMetrics::Sample> TeamMetrics::Range(std::string_view team,
                                                    std::optional<base::WallTime> start,
                                                    std::optional<base::WallTime> end) const {
  std::vector<Sample> out;
  std::lock_guard lock(mu_);
  auto it = teams_.find(team);
  if (it == teams_.end()) return out;
  for (const auto& s : it->second.samples) {
    if ((start && s.time < *start) || (end && s.time > *end)) continue;
    out.push_back(s);
  }
  return out;
}

void TeamMetrics::Loop() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (wake_.wait_for(lock, options_.interval, [this] { return stopping_; })) break;
    lock.unlock();
    SampleNow();
    lock.lock();
  }
}

}  // namespace warren::server::e2b
