#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace warren::controller {

struct TimersOptions {
  // Longest sleep between checks even when nothing is due: bounds how late a timer fires if
  // the wall clock jumps.
  std::chrono::milliseconds max_sleep{1000};
  // Wait before retrying a timer whose write failed (store busy, conflict storm).
  std::chrono::milliseconds retry_delay{500};
};

struct TimersStats {
  uint64_t deleted = 0;  // shutdownTime fired
  uint64_t paused = 0;   // pauseTime fired
  uint64_t failures = 0;
  size_t pending = 0;  // sandboxes with a timer not yet due
};

// The `timers` reconciler of Sandbox lifetimes (openkruise-agents.md §2.10): at
// spec.shutdownTime the Sandbox is deleted; at spec.pauseTime it gets spec.paused=true (and the
// pauseTime is cleared, so a later resume does not pause it again at once). The E2B API turns
// `timeout`/`autoPause` into these fields; anyone may set them through the resource API.
//
// Timers due while the server was down fire right after Start (it lists before it watches).
// A timer is re-checked against the freshest object before it acts (a connect that just
// extended it wins), and writes carry the object's uid so a same-named newer Sandbox is never
// touched.
//
// Thread-safe. Owns a store subscription (events on the store thread only update the timer
// index) and one worker thread that does the writes. Borrows the store and clock.
class TimersController {
 public:
  TimersController(store::Store& store, base::Clock& clock, TimersOptions options = {});
  ~TimersController();

  Status Start();
  void Stop();

  // Re-evaluates the timers now (after a fake clock moved, in tests).
  void Kick();
  TimersStats Stats() const;

 private:
  struct Timers {
    std::string uid;
    std::optional<base::WallTime> shutdown;
    std::optional<base::WallTime> pause;   // only while not paused
    base::WallTime not_before{};           // retry backoff after a failed write
    std::optional<base::WallTime> queued;  // its entry in due_
  };
  using Key = std::pair<std::string, std::string>;  // namespace, name

  void OnEvent(const store::WatchEvent& event);
  void Track(const api::Object& sandbox);  // under mu_
  // Puts the timer's due time into due_ after a change of it; drops it with its entry. Under mu_.
  void Requeue(const Key& key, Timers& t);
  void Untrack(std::map<Key, Timers>::iterator it);
  void Run();
  // The earliest time anything is due. Under mu_.
  std::optional<base::WallTime> NextDueLocked() const;
  // Acts on one sandbox whose timer is due; false when the write failed.
  bool Fire(const Key& key, const std::string& uid);

  store::Store& store_;
  base::Clock& clock_;
  const TimersOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;         // guarded by mu_
  bool kicked_ = false;           // re-evaluate now (Kick, or the index changed); guarded by mu_
  std::map<Key, Timers> timers_;  // guarded by mu_
  // Every timer that is set, by when it is due: the worker looks at the head instead of walking
  // every sandbox on each change (a pool's claims change one timer each). Guarded by mu_.
  std::set<std::pair<base::WallTime, Key>> due_;
  TimersStats stats_;  // guarded by mu_
  std::unique_ptr<store::Subscription> subscription_;
  std::thread worker_;
};

}  // namespace warren::controller
