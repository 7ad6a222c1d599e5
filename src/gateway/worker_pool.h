#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace warren::gateway {

// A fixed set of threads running posted jobs in order of arrival: the gateway's dials (and
// auto-resumes) block, so they run here rather than on an event loop. Thread-safe. The
// destructor (or Stop) lets the running jobs finish and drops the queued ones.
class WorkerPool {
 public:
  explicit WorkerPool(int threads);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // False once stopped (the job is then destroyed without running).
  bool Post(std::function<void()> job);
  void Stop();

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::vector<std::thread> threads_;
};

}  // namespace warren::gateway
