#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace warren::node {

// A controller's work queue of object keys: a key is handed to at most one worker at a time,
// a key added while it is being worked on is handed out again once Done, and a key added many
// times before a worker takes it is worked on once. AddAfter schedules a key for later (retries
// with backoff, restarts); an earlier Add or AddAfter of the same key wins.
//
// Thread-safe. Get blocks; Shutdown wakes every waiter (Get then returns nullopt).
class WorkQueue {
 public:
  explicit WorkQueue(base::Clock& clock) : clock_(clock) {}

  void Add(std::string_view key);
  void AddAfter(std::string_view key, std::chrono::milliseconds delay);
  // The next key to work on; nullopt after Shutdown.
  std::optional<std::string> Get();
  // The worker is finished with `key` (it came from Get).
  void Done(const std::string& key);
  void Shutdown();

  // Keys waiting or delayed (not counting those being worked on): for tests.
  size_t Pending() const;

 private:
  void PromoteDueLocked();

  base::Clock& clock_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::set<std::string, std::less<>> queued_;  // guarded by mu_; ready, in order_
  std::map<uint64_t, std::string> order_;      // guarded by mu_; FIFO of queued_
  uint64_t next_seq_ = 0;                      // guarded by mu_
  std::set<std::string, std::less<>> active_;  // guarded by mu_; being worked on
  std::set<std::string, std::less<>> again_;   // guarded by mu_; added while active
  std::map<std::string, base::MonoTime, std::less<>> delayed_;  // guarded by mu_
  bool shutdown_ = false;                                       // guarded by mu_
};

}  // namespace warren::node
