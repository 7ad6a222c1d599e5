#include "net/blocking_pool.h"

#include <algorithm>

namespace warren::net {

BlockingPool::BlockingPool(int max_threads, std::chrono::milliseconds idle_timeout)
    : max_threads_(std::max(1, max_threads)), idle_timeout_(idle_timeout) {}

BlockingPool::~BlockingPool() { Join(); }

void BlockingPool::Post(std::function<void()> task) {
  std::vector<std::thread> finished;
  bool wake = false;
  {
    std::unique_lock lock(mu_);
    if (joining_) {
      // A connection that outlived the server's shutdown grace can still post: its task is
      // dropped (a handler's Responder answers 500 when destroyed unanswered), not run.
      lock.unlock();
      task = nullptr;
      return;
    }
    queue_.push_back(std::move(task));
    finished = TakeFinishedLocked();
    wake = idle_ > 0;
    // An idle thread woken for an earlier task still counts as idle until it takes it.
    if (queue_.size() > static_cast<size_t>(idle_) && running_ < max_threads_) {
      ++running_;
      std::thread t([this] { Run(); });
      threads_.emplace(t.get_id(), std::move(t));
    }
  }
  // Woken outside the lock, the thread does not block on it at once.
  if (wake) work_.notify_one();
  for (auto& t : finished) t.join();
}

void BlockingPool::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty() && !joining_) {
      ++idle_;
      bool woken =
          work_.wait_for(lock, idle_timeout_, [this] { return !queue_.empty() || joining_; });
      --idle_;
      if (!woken) break;  // idle for too long
    }
    if (queue_.empty()) break;  // joining, and nothing is left to run
    std::function<void()> task = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    task();
    task = nullptr;  // what it captured goes before the lock is taken again
    lock.lock();
  }
  --running_;
  finished_.push_back(std::this_thread::get_id());
  exited_.notify_all();
}

std::vector<std::thread> BlockingPool::TakeFinishedLocked() {
  std::vector<std::thread> out;
  for (auto id : finished_) {
    auto it = threads_.find(id);
    out.push_back(std::move(it->second));
    threads_.erase(it);
  }
  finished_.clear();
  return out;
}

void BlockingPool::Join() {
  std::vector<std::thread> finished;
  {
    std::unique_lock lock(mu_);
    joining_ = true;
    work_.notify_all();
    exited_.wait(lock, [this] { return running_ == 0; });
    finished = TakeFinishedLocked();
  }
  for (auto& t : finished) t.join();
}

int BlockingPool::threads() const {
  std::lock_guard lock(mu_);
  return running_;
}

}  // namespace warren::net
