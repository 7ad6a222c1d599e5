#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "store/store.h"

namespace warren::store {

// A committed change as the hub fans it out to subscribers.
struct Change {
  int64_t revision = 0;
  EventType type = EventType::kAdded;
  std::string kind_key;  // KindInfo::GroupKind()
  std::shared_ptr<const api::Object> object;
  // The state before a kModified change, so a watch with a selector sees an object that stops
  // (starts) matching as DELETED (ADDED). May be null when unknown.
  std::shared_ptr<const api::Object> previous;
  // Part of the initial list of a watch without a resource version: delivered as ADDED in
  // name order, so revisions are not monotonic and are not used to drop repeats.
  bool snapshot = false;
};

// What a watch of `kind_key` ("" = every kind) with `options` sees of `change`: its event
// type (a modification that makes the object start or stop matching the selectors becomes
// ADDED or DELETED), or nullopt when the watch does not see it. Shared by every backend.
std::optional<EventType> VisibleAs(std::string_view kind_key, const WatchOptions& options,
                                   const Change& change);

// Fans committed changes out to watch subscribers on one dispatch thread, in revision order.
// A new subscriber first receives a replay (history or current objects, produced by the
// caller) and then live changes, with nothing lost or repeated at the seam: live changes that
// arrive during the replay are buffered and those the replay already covered are dropped.
// Thread-safe. Subscriptions may outlive the hub (they then do nothing).
class WatchHub {
 public:
  WatchHub();
  ~WatchHub();  // Close(Unavailable) if not closed yet
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  // `replay(emit)` runs on the calling thread and emits, in revision order, the changes before
  // live delivery starts; `replay_revision` is the revision the replay brings the subscriber
  // up to (live changes at or below it are skipped). Replay errors fail the subscription.
  using Emit = std::function<void(const Change&)>;
  using Replay = std::function<Result<int64_t>(const Emit& emit)>;
  Result<std::unique_ptr<Subscription>> Subscribe(std::string kind_key, WatchOptions options,
                                                  WatchSink sink, const Replay& replay);

  // Queues changes committed together, in revision order. Called by the single writer.
  void Publish(std::vector<Change> changes);

  // Delivers what is queued, then ends every subscription with `reason` and stops the thread.
  void Close(const Status& reason);

  size_t subscriber_count() const;

  struct Subscriber;
  struct State;

 private:
  std::shared_ptr<State> state_;
  std::thread dispatcher_;
};

}  // namespace warren::store
