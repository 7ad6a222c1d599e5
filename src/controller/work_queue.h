#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace warren::controller {

// The keys ("namespace/name") a controller has to reconcile, shaped like client-go's rate-limited
// work queue:
//   - a key added several times before a worker takes it is handed out once;
//   - a key being processed is never handed to a second worker; added meanwhile, it comes back
//     after Done (so every change is seen by a reconcile that started after it);
//   - AddAfter / AddWithBackoff requeue later (failures back off 5 ms × 2^n up to 30 s, until
//     Forget).
// Thread-safe. Workers loop on Get() until it returns nullopt after ShutDown.
class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;

  WorkQueue() = default;
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Add(const std::string& key);
  // Adds the key once `delay` has passed (an earlier pending add of the same key wins).
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // Requeues a key whose reconcile failed, later each time it fails again.
  void AddWithBackoff(const std::string& key);
  // Resets the key's backoff (after a reconcile that succeeded).
  void Forget(const std::string& key);

  // Blocks until a key is due; nullopt once shut down.
  std::optional<std::string> Get();
  // Marks the key's reconcile finished; it is queued again if it was added meanwhile.
  void Done(const std::string& key);
  // Wakes every Get (which then return nullopt); later adds are dropped.
  void ShutDown();

  // Keys queued and due, not counting delayed ones or ones in process.
  size_t Len() const;

 private:
  void AddLocked(const std::string& key);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;               // guarded by mu_
  std::unordered_set<std::string> dirty_;       // queued or re-added; guarded by mu_
  std::unordered_set<std::string> processing_;  // guarded by mu_
  // Delayed adds, one per key (the earliest): by due time, and each key's due time.
  std::set<std::pair<Clock::time_point, std::string>> later_;  // guarded by mu_
  std::unordered_map<std::string, Clock::time_point> due_;     // guarded by mu_
  std::unordered_map<std::string, int> failures_;              // guarded by mu_
  bool shut_down_ = false;                                     // guarded by mu_
};

}  // namespace warren::controller
