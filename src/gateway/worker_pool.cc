#include "gateway/worker_pool.h"

#include <algorithm>

namespace warren::gateway {

WorkerPool::WorkerPool(int threads) {
  for (int i = 0; i < std::max(1, threads); ++i) threads_.emplace_back([this] { Run(); });
}

WorkerPool::~WorkerPool() { Stop(); }

bool WorkerPool::Post(std::function<void()> job) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
  return true;
}

void WorkerPool::Stop() {
  std::deque<std::function<void()>> dropped;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    dropped.swap(jobs_);
  }
  wake_.notify_all();
  for (std::thread& t : threads_) {
    if (t.joinable()) t.join();
  }
  // `dropped` goes here, outside the lock: a job's captures may do work when destroyed.
}

void WorkerPool::Run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      wake_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

}  // namespace warren::gateway
