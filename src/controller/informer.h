#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/object.h"
#include "base/status.h"
#include "store/store.h"

namespace warren::controller {

using ObjectPtr = std::shared_ptr<const api::Object>;

// An in-memory copy of one kind's objects (optionally one namespace, one label selector), kept
// current by a store subscription, with handlers that see every change — client-go's informer.
// Start lists, then watches from the list's revision, so no change falls between the two. When
// the watch ends by itself (history lost, a consumer too slow), a resync thread lists again,
// reports the difference as changes, and watches again.
//
// Handlers run one at a time, in revision order, on a store thread (or the resync thread):
// they must not block and must not write to the store synchronously; they update indexes and
// queue work. Borrows the store, which must outlive the informer. Reads are thread-safe.
class Informer {
 public:
  struct Options {
    const api::KindInfo* kind = nullptr;
    std::string namespace_;  // "" = all
    api::LabelSelector label_selector;
    std::string name;  // for logs: "sandboxes"
  };
  struct Change {
    store::EventType type = store::EventType::kAdded;
    ObjectPtr object;  // the new state; for kDeleted the last one
    ObjectPtr old;     // the previous cached state; null for kAdded
  };
  using Handler = std::function<void(const Change&)>;

  Informer(store::Store& store, Options options);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  // Before Start.
  void AddHandler(Handler handler);
  // Lists (handlers see every listed object as kAdded, on this thread) and starts watching.
  Status Start();
  // Ends the watch and joins the resync thread; no handler runs after it returns.
  void Stop();

  ObjectPtr Get(std::string_view namespace_, std::string_view name) const;
  std::vector<ObjectPtr> List() const;
  // The store revision the cache reflects.
  int64_t revision() const;
  // Waits until the cache reflects revision `rv` (e.g. a write this process just made) and the
  // handlers have seen it; false on timeout.
  bool WaitForRevision(int64_t rv, std::chrono::milliseconds timeout) const;
  // Waits until `done()` is true, checking it after every change the cache applies; false on
  // timeout. `done` runs without the cache's lock held (it may call Get).
  bool WaitUntil(const std::function<bool()>& done, std::chrono::milliseconds timeout) const;

 private:
  static std::string Key(std::string_view ns, std::string_view name);
  void Apply(store::EventType type, ObjectPtr object, int64_t revision);
  Status Subscribe(int64_t from_revision);
  Status Resync();
  void ResyncLoop();

  store::Store& store_;
  const Options options_;
  std::vector<Handler> handlers_;  // fixed after Start

  mutable std::mutex mu_;
  mutable std::condition_variable revision_cv_;
  std::unordered_map<std::string, ObjectPtr> objects_;  // guarded by mu_
  int64_t revision_ = 0;                                // guarded by mu_
  uint64_t applied_ = 0;                                // changes applied so far; guarded by mu_

  // Serialises Apply between the subscription and the resync thread.
  std::mutex apply_mu_;

  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  std::unique_ptr<store::Subscription> subscription_;  // guarded by watch_mu_
  bool need_resync_ = false;                           // guarded by watch_mu_
  bool stopping_ = false;                              // guarded by watch_mu_
  uint64_t generation_ = 0;  // guarded by watch_mu_; stale subscriptions' closes are ignored
  std::thread resync_thread_;
};

}  // namespace warren::controller
