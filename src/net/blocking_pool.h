#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

namespace warren::net {

// Threads for handlers that block, started when runnable work arrives and every thread is busy
// (up to `max_threads`), and ended after `idle_timeout` without work. asio::thread_pool starts
// all of its threads at once: envd, pid 1 of every sandbox, held 128 idle threads that counted
// against the sandbox's pids limit.
//
// Fairness: every task carries a key (the HTTP server uses the caller's tenant, see
// RouteOptions::fairness_key). Each key has its own queue, run in the order posted; free threads
// take from the keys in turn (round-robin), and no key has more than `max_running_per_key`
// tasks running at once. So a key with 500 queued tasks slows only itself: another key's task
// waits for at most one task of each busy key ahead of it, and never for all the threads.
// Post without a key uses key 0. Thread-safe.
class BlockingPool {
 public:
  // `max_running_per_key` 0 = `max_threads` (no per-key limit beyond the pool's).
  explicit BlockingPool(int max_threads,
                        std::chrono::milliseconds idle_timeout = std::chrono::seconds(10),
                        int max_running_per_key = 0);
  ~BlockingPool();  // Join()
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void Post(std::function<void()> task) { Post(0, std::move(task)); }
  void Post(uint64_t key, std::function<void()> task);

  // Runs everything posted so far, then ends every thread. Tasks posted afterwards are
  // destroyed without running.
  void Join();

  int threads() const;  // running now, busy or idle
  // Tasks queued and not yet started, for `key` and in all.
  size_t queued(uint64_t key) const;
  size_t queued() const;

 private:
  struct KeyQueue {
    std::deque<std::function<void()>> tasks;
    int running = 0;
    bool in_ready = false;  // listed in ready_
  };

  void Run();
  std::vector<std::thread> TakeFinishedLocked();
  // Tasks of `q` that could start now (queued, and under the per-key limit).
  size_t RunnableLocked(const KeyQueue& q) const;
  // Puts `key` at the back of ready_ if it has a task that could start now.
  void MakeReadyLocked(uint64_t key, KeyQueue& q);

  const int max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  const int max_running_per_key_;
  mutable std::mutex mu_;
  std::condition_variable work_;    // a task became runnable, or Join began
  std::condition_variable exited_;  // a thread ended
  // Guarded by mu_:
  std::unordered_map<uint64_t, KeyQueue> keys_;  // keys with tasks queued or running
  std::deque<uint64_t> ready_;                   // keys with a runnable task, in turn order
  size_t runnable_ = 0;                          // sum of RunnableLocked over keys_
  size_t queued_ = 0;                            // tasks queued in all keys
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_;  // ended, not yet joined
  int running_ = 0;
  int idle_ = 0;
  bool joining_ = false;
};

}  // namespace warren::net
