#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

namespace warren::net {

// Threads for handlers that block, started when work arrives and every thread is busy (up to
// `max_threads`), and ended after `idle_timeout` without work. asio::thread_pool starts all of
// its threads at once: envd, pid 1 of every sandbox, held 128 idle threads that counted against
// the sandbox's pids limit. Tasks run in the order posted. Thread-safe.
class BlockingPool {
 public:
  explicit BlockingPool(int max_threads,
                        std::chrono::milliseconds idle_timeout = std::chrono::seconds(10));
  ~BlockingPool();  // Join()
  BlockingPool(const BlockingPool&) = delete;
  BlockingPool& operator=(const BlockingPool&) = delete;

  void Post(std::function<void()> task);

  // Runs everything posted so far, then ends every thread. Tasks posted afterwards are
  // destroyed without running.
  void Join();

  int threads() const;  // running now, busy or idle

 private:
  void Run();
  std::vector<std::thread> TakeFinishedLocked();

  const int max_threads_;
  const std::chrono::milliseconds idle_timeout_;
  mutable std::mutex mu_;
  std::condition_variable work_;    // a task was queued, or Join began
  std::condition_variable exited_;  // a thread ended
  std::deque<std::function<void()>> queue_;
  std::map<std::thread::id, std::thread> threads_;
  std::vector<std::thread::id> finished_;  // ended, not yet joined
  int running_ = 0;
  int idle_ = 0;
  bool joining_ = false;
};

}  // namespace warren::net
