#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "gateway/route.h"

namespace warren::gateway {

// A relay the table can cut when its sandbox stops being routable (killed, paused, handed to
// another user). Implementations are thread-safe; Abort may be called from any thread, more
// than once, and must not block.
class OpenRelay {
 public:
  virtual ~OpenRelay() = default;
  // `reason` says why the route went down ("the sandbox was removed (killed or deleted)").
  virtual void Abort(std::string_view reason) = 0;
};

struct RouteTableOptions {
  // How long a removal keeps stale updates of the removed route out. Watch events arrive
  // within moments; the fence only has to outlast that window.
  std::chrono::seconds fence_ttl{120};
};

// A route as one request sees it. `generation` changes whenever the route stops being the
// same routable thing (removed, no longer running, new uid or token), so a relay attached under
// an old generation is refused.
struct RouteLookup {
  std::shared_ptr<const Route> route;
  uint64_t generation = 0;
};

enum class UpdateResult {
  kApplied,
  kStale,   // not newer than what the table has
  kFenced,  // the sandbox was removed and this update is from before the removal
};
std::string_view UpdateResultName(UpdateResult result);

struct RouteTableStats {
  size_t running = 0;
  size_t paused = 0;
  size_t gone = 0;
  size_t closed = 0;
  size_t fences = 0;
  size_t open_relays = 0;
  std::vector<std::pair<std::string, size_t>> relays_per_sandbox;  // sandboxes with any, by id
};

// Sandbox id → route, fed by the store watch (the source of truth) and by direct upserts and
// removals from the claim and lifecycle paths (so the first request after a claim never sees a
// 502). Updates apply only when their resourceVersion is newer than the route's; a removal
// leaves a fence for `fence_ttl` so a late event cannot bring the route back. The table also
// holds the relays open to each sandbox and aborts them when the route goes down.
//
// Thread-safe: every method may be called from any thread. Relay aborts and the down observer
// run on the calling thread after the table's lock is released. Owned by whoever wires the
// gateway; it must outlive the Gateway and RouteSync that use it.
class RouteTable {
 public:
  explicit RouteTable(base::Clock& clock = base::RealClock(), RouteTableOptions options = {});
  ~RouteTable();
  RouteTable(const RouteTable&) = delete;
  RouteTable& operator=(const RouteTable&) = delete;

  // Inserts or replaces the route of route.sandbox_id. A route that stops running (or gets a
  // new uid or token) aborts the relays open under the old one.
  UpdateResult Upsert(Route route);

  // Removes the route, aborts its relays and fences the id: later updates at or below
  // `resource_version` are ignored. With 0 (the caller does not know the revision of its
  // deletion), updates of the same uid are ignored until the fence expires. A non-empty `uid`
  // that is not the current route's makes this a removal of an older incarnation: ignored.
  // Returns whether a route was removed.
  bool Remove(std::string_view sandbox_id, int64_t resource_version, std::string_view uid = {});

  // After a full list at `list_revision`: removes every route whose id is not in `present` and
  // whose revision is not newer than the list (newer ones came from direct upserts since).
  size_t RemoveAbsent(const std::set<std::string, std::less<>>& present, int64_t list_revision);

  std::optional<RouteLookup> Lookup(std::string_view sandbox_id) const;

  // Blocks until the sandbox's route is running, or returns nullopt once `timeout` passes or
  // the route is removed or gone. Never call it on an event loop.
  std::optional<RouteLookup> WaitRunning(std::string_view sandbox_id,
                                         std::chrono::milliseconds timeout) const;

  // Registers a relay under the generation a lookup returned. False (and nothing kept) when the
  // route has changed since: the caller must not relay.
  bool AttachRelay(std::string_view sandbox_id, uint64_t generation,
                   std::shared_ptr<OpenRelay> relay);
  void DetachRelay(std::string_view sandbox_id, const OpenRelay* relay);
  // Running routes with an idle pause whose sandbox had no relay open for at least its
  // idle_pause_seconds (counted from the last relay's end, or from when it started running).
  std::vector<Route> IdleRoutes() const;

  // Called with the sandbox id whenever its route goes down (removed, stops running, new uid or
  // token), after its relays were aborted, on the thread that made the change. It must not
  // block or call back into the table. Replacing or clearing it waits for a call in progress,
  // so once SetDownObserver(nullptr) returns the old observer is never called again.
  void SetDownObserver(std::function<void(const std::string& sandbox_id)> observer);

  // Drops expired fences. Cheap; callers run it now and then.
  void SweepFences();

  RouteTableStats Stats() const;

 private:
  struct Entry {
    std::shared_ptr<const Route> route;
    uint64_t generation = 0;
    std::unordered_map<const OpenRelay*, std::shared_ptr<OpenRelay>> relays;
    base::MonoTime last_active{};  // a relay attached or ended, or the route started running
  };
  struct Fence {
    int64_t resource_version = 0;
    std::string uid;         // with block_uid: updates of this uid are refused
    bool block_uid = false;  // the removal's revision was unknown
    base::MonoTime expires{};
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  template <typename V>
  using IdMap = std::unordered_map<std::string, V, StringHash, std::equal_to<>>;
  using RelayList = std::vector<std::shared_ptr<OpenRelay>>;

  // Takes the entry's relays out and moves it to a new generation. Under mu_.
  RelayList TakeDownLocked(Entry& entry);
  void AfterDown(const std::string& sandbox_id, RelayList relays, std::string_view reason);

  base::Clock& clock_;
  const RouteTableOptions options_;

  std::mutex observer_mu_;                                 // held while the observer runs
  std::function<void(const std::string&)> down_observer_;  // guarded by observer_mu_

  mutable std::mutex mu_;
  mutable std::condition_variable changed_;
  IdMap<Entry> entries_;          // guarded by mu_
  IdMap<Fence> fences_;           // guarded by mu_
  uint64_t next_generation_ = 1;  // guarded by mu_
};

}  // namespace warren::gateway
