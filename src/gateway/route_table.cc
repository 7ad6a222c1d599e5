#include "gateway/route_table.h"

#include "base/log.h"

namespace warren::gateway {

std::string_view UpdateResultName(UpdateResult result) {
  switch (result) {
    case UpdateResult::kApplied:
      return "applied";
    case UpdateResult::kStale:
      return "stale";
    case UpdateResult::kFenced:
      return "fenced";
  }
  return "unknown";
}

RouteTable::RouteTable(base::Clock& clock, RouteTableOptions options)
    : clock_(clock), options_(options) {}

RouteTable::~RouteTable() = default;

void RouteTable::SetDownObserver(std::function<void(const std::string&)> observer) {
  std::lock_guard lock(observer_mu_);
  down_observer_ = std::move(observer);
}

RouteTable::RelayList RouteTable::TakeDownLocked(Entry& entry) {
  RelayList relays;
  relays.reserve(entry.relays.size());
  for (auto& [key, relay] : entry.relays) relays.push_back(std::move(relay));
  entry.relays.clear();
  entry.generation = next_generation_++;
  return relays;
}

void RouteTable::AfterDown(const std::string& sandbox_id, RelayList relays,
                           std::string_view reason) {
  if (!relays.empty()) {
    base::Logger("gateway")->info("aborting relays sandbox_id={} count={} reason=\"{}\"",
                                  sandbox_id, relays.size(), reason);
  }
  for (auto& relay : relays) relay->Abort(reason);
  std::lock_guard lock(observer_mu_);
  if (down_observer_) down_observer_(sandbox_id);
}

UpdateResult RouteTable::Upsert(Route route) {
  RelayList aborted;
  bool down = false;
  std::string_view reason;
  std::string id = route.sandbox_id;
  {
    std::lock_guard lock(mu_);
    if (auto f = fences_.find(id); f != fences_.end()) {
      const Fence& fence = f->second;
      bool expired = clock_.Monotonic() >= fence.expires;
      // A direct update (revision 0) is a deliberate decision of a claim or lifecycle path and
      // passes; a watch event from before the removal does not.
      bool before_removal =
          route.resource_version != 0 && (route.resource_version <= fence.resource_version ||
                                          (fence.block_uid && route.uid == fence.uid));
      if (!expired && before_removal) return UpdateResult::kFenced;
      fences_.erase(f);
    }
    auto it = entries_.find(id);
    if (it == entries_.end()) {
      Entry entry;
      entry.generation = next_generation_++;
      entry.last_active = clock_.Monotonic();
      entry.route = std::make_shared<const Route>(std::move(route));
      entries_.emplace(std::move(id), std::move(entry));
      changed_.notify_all();
      return UpdateResult::kApplied;
    }
    Entry& entry = it->second;
    const Route& old = *entry.route;
    if (route.resource_version != 0 && route.resource_version <= old.resource_version) {
      return UpdateResult::kStale;
    }
    // A direct update without a revision keeps the one the table knew, so watch events older
    // than it stay stale.
    if (route.resource_version == 0) route.resource_version = old.resource_version;
    down = old.state == RouteState::kRunning &&
           (route.state != RouteState::kRunning || route.uid != old.uid ||
            route.access_token != old.access_token);
    if (down) {
      aborted = TakeDownLocked(entry);
      if (route.state == RouteState::kPaused) {
        reason = "the sandbox was paused";
      } else if (route.state != RouteState::kRunning) {
        reason = "the sandbox stopped running (killed, deleted or failed)";
      } else if (route.uid != old.uid) {
        reason = "the sandbox id now names another sandbox";
      } else {
        reason = "the sandbox's access token changed";
      }
    }
    if (old.state != RouteState::kRunning && route.state == RouteState::kRunning) {
      entry.last_active = clock_.Monotonic();  // resumed: idle from now
    }
    entry.route = std::make_shared<const Route>(std::move(route));
    changed_.notify_all();
  }
  if (down) AfterDown(id, std::move(aborted), reason);
  return UpdateResult::kApplied;
}

bool RouteTable::Remove(std::string_view sandbox_id, int64_t resource_version,
                        std::string_view uid) {
  RelayList aborted;
  std::string id(sandbox_id);
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(sandbox_id);
    Fence fence;
    fence.resource_version = resource_version;
    fence.expires = clock_.Monotonic() + options_.fence_ttl;
    if (it != entries_.end()) {
      const Route& current = *it->second.route;
      if (!uid.empty() && current.uid != uid) return false;  // an older incarnation's removal
      if (resource_version != 0 && current.resource_version > resource_version) return false;
      if (resource_version == 0) {
        fence.resource_version = current.resource_version;
        fence.uid = current.uid;
        fence.block_uid = true;
      }
    } else if (resource_version == 0 && !uid.empty()) {
      fence.uid = std::string(uid);
      fence.block_uid = true;
    }
    auto existing = fences_.find(sandbox_id);
    if (existing != fences_.end()) {
      fence.resource_version = std::max(fence.resource_version, existing->second.resource_version);
      existing->second = fence;
    } else {
      fences_.emplace(id, fence);
    }
    if (it == entries_.end()) return false;
    aborted = TakeDownLocked(it->second);
    entries_.erase(it);
    changed_.notify_all();
  }
  AfterDown(id, std::move(aborted), "the sandbox was removed (killed or deleted)");
  return true;
}

size_t RouteTable::RemoveAbsent(const std::set<std::string, std::less<>>& present,
                                int64_t list_revision) {
  std::vector<std::string> absent;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, entry] : entries_) {
      if (!present.count(id) && entry.route->resource_version <= list_revision) {
        absent.push_back(id);
      }
    }
  }
  size_t removed = 0;
  for (const std::string& id : absent) {
    if (Remove(id, list_revision)) ++removed;
  }
  return removed;
}

std::optional<RouteLookup> RouteTable::Lookup(std::string_view sandbox_id) const {
  std::lock_guard lock(mu_);
  auto it = entries_.find(sandbox_id);
  if (it == entries_.end()) return std::nullopt;
  return RouteLookup{it->second.route, it->second.generation};
}

std::optional<RouteLookup> RouteTable::WaitRunning(std::string_view sandbox_id,
                                                   std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  std::optional<RouteLookup> found;
  changed_.wait_for(lock, timeout, [&] {
    auto it = entries_.find(sandbox_id);
    // Removed or gone (killed while resuming): no point waiting any longer.
    if (it == entries_.end() || it->second.route->state == RouteState::kGone) return true;
    if (it->second.route->state != RouteState::kRunning) return false;
    found = RouteLookup{it->second.route, it->second.generation};
    return true;
  });
  return found;
}

bool RouteTable::AttachRelay(std::string_view sandbox_id, uint64_t generation,
                             std::shared_ptr<OpenRelay> relay) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(sandbox_id);
  if (it == entries_.end() || it->second.generation != generation ||
      it->second.route->state != RouteState::kRunning) {
    return false;
  }
  const OpenRelay* key = relay.get();
  it->second.relays.emplace(key, std::move(relay));
  it->second.last_active = clock_.Monotonic();
  return true;
}

void RouteTable::DetachRelay(std::string_view sandbox_id, const OpenRelay* relay) {
  std::shared_ptr<OpenRelay> released;  // destroyed outside the lock
  std::lock_guard lock(mu_);
  auto it = entries_.find(sandbox_id);
  if (it == entries_.end()) return;
  auto r = it->second.relays.find(relay);
  if (r == it->second.relays.end()) return;
  released = std::move(r->second);
  it->second.relays.erase(r);
  it->second.last_active = clock_.Monotonic();
}

std::vector<Route> RouteTable::IdleRoutes() const {
  std::vector<Route> out;
  std::lock_guard lock(mu_);
  const base::MonoTime now = clock_.Monotonic();
  for (const auto& [id, entry] : entries_) {
    const Route& r = *entry.route;
    if (r.state != RouteState::kRunning || r.idle_pause_seconds <= 0 || !entry.relays.empty()) {
      continue;
    }
    if (now - entry.last_active >= std::chrono::seconds(r.idle_pause_seconds)) out.push_back(r);
  }
  return out;
}

void RouteTable::SweepFences() {
  std::lock_guard lock(mu_);
  base::MonoTime now = clock_.Monotonic();
  std::erase_if(fences_, [&](const auto& kv) { return now >= kv.second.expires; });
}

RouteTableStats RouteTable::Stats() const {
  RouteTableStats stats;
  std::lock_guard lock(mu_);
  for (const auto& [id, entry] : entries_) {
    switch (entry.route->state) {
      case RouteState::kRunning:
        ++stats.running;
        break;
      case RouteState::kPaused:
        ++stats.paused;
        break;
      case RouteState::kGone:
        ++stats.gone;
        break;
      case RouteState::kClosed:
        ++stats.closed;
        break;
    }
    if (!entry.relays.empty()) {
      stats.open_relays += entry.relays.size();
      stats.relays_per_sandbox.emplace_back(id, entry.relays.size());
    }
  }
  stats.fences = fences_.size();
  std::sort(stats.relays_per_sandbox.begin(), stats.relays_per_sandbox.end());
  return stats;
}

}  // namespace warren::gateway
