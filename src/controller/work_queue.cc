#include "controller/work_queue.h"

#include <algorithm>

namespace warren::controller {

void WorkQueue::Add(const std::string& key) {
  std::lock_guard lock(mu_);
  AddLocked(key);
}

void WorkQueue::AddLocked(const std::string& key) {
  if (shut_down_ || dirty_.contains(key)) return;
  dirty_.insert(key);
  if (processing_.contains(key)) return;  // Done() queues it
  queue_.push_back(key);
  cv_.notify_one();
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  if (delay <= std::chrono::milliseconds(0)) return Add(key);
  std::lock_guard lock(mu_);
  if (shut_down_) return;
  const Clock::time_point due = Clock::now() + delay;
  auto [it, inserted] = due_.try_emplace(key, due);
  if (!inserted) {
    // Requeued on every pass that defers it (a pool refill waiting out a burst of claims):
    // one pending add is enough, and duplicates would each wake a reconcile of their own.
    if (it->second <= due) return;
    later_.erase({it->second, key});
    it->second = due;
  }
  later_.emplace(due, key);
  cv_.notify_one();  // a waiter may need an earlier wake-up
}

void WorkQueue::AddWithBackoff(const std::string& key) {
  int failures;
  {
    std::lock_guard lock(mu_);
    failures = failures_[key]++;
  }
  auto delay = std::chrono::milliseconds(5) * (1LL << std::min(failures, 13));
  AddAfter(key, std::min<std::chrono::milliseconds>(delay, std::chrono::seconds(30)));
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard lock(mu_);
  failures_.erase(key);
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    if (shut_down_) return std::nullopt;
    auto now = Clock::now();
    while (!later_.empty() && later_.begin()->first <= now) {
      auto due = later_.extract(later_.begin());
      due_.erase(due.value().second);
      AddLocked(due.value().second);
    }
    if (!queue_.empty()) {
      std::string key = std::move(queue_.front());
      queue_.pop_front();
      dirty_.erase(key);
      processing_.insert(key);
      return key;
    }
    if (later_.empty()) {
      cv_.wait(lock);
    } else {
      // A copy: wait_until reads the deadline again after it wakes, and by then another worker
      // may have taken that entry out of later_ (and freed it).
      const Clock::time_point next_due = later_.begin()->first;
      cv_.wait_until(lock, next_due);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  processing_.erase(key);
  if (dirty_.contains(key) && !shut_down_) {
    queue_.push_back(key);
    cv_.notify_one();
  }
}

void WorkQueue::ShutDown() {
  std::lock_guard lock(mu_);
  shut_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Len() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

}  // namespace warren::controller
