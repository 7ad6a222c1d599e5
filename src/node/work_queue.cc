#include "node/work_queue.h"

#include <algorithm>

namespace warren::node {

void WorkQueue::Add(std::string_view key) {
  std::lock_guard lock(mu_);
  if (shutdown_) return;
  delayed_.erase(std::string(key));
  if (active_.count(key)) {
    again_.emplace(key);
    return;
  }
  if (queued_.emplace(key).second) order_.emplace(next_seq_++, std::string(key));
  cv_.notify_one();
}

void WorkQueue::AddAfter(std::string_view key, std::chrono::milliseconds delay) {
  if (delay <= std::chrono::milliseconds(0)) return Add(key);
  std::lock_guard lock(mu_);
  if (shutdown_ || queued_.count(key)) return;
  const base::MonoTime due = clock_.Monotonic() + delay;
  auto [it, inserted] = delayed_.emplace(std::string(key), due);
  if (!inserted && due < it->second) it->second = due;
  cv_.notify_all();
}

void WorkQueue::PromoteDueLocked() {
  const base::MonoTime now = clock_.Monotonic();
  for (auto it = delayed_.begin(); it != delayed_.end();) {
    if (it->second > now) {
      ++it;
      continue;
    }
    if (active_.count(it->first)) {
      again_.insert(it->first);
    } else if (queued_.insert(it->first).second) {
      order_.emplace(next_seq_++, it->first);
    }
    it = delayed_.erase(it);
  }
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock lock(mu_);
  while (true) {
    if (shutdown_) return std::nullopt;
    PromoteDueLocked();
    if (!order_.empty()) {
      std::string key = std::move(order_.begin()->second);
      order_.erase(order_.begin());
      queued_.erase(key);
      active_.insert(key);
      return key;
    }
    if (delayed_.empty()) {
      cv_.wait(lock);
    } else {
      base::MonoTime earliest = base::MonoTime::max();
      for (const auto& [k, due] : delayed_) earliest = std::min(earliest, due);
      // The clock may be a fake one: never sleep longer than a short tick past "now".
      auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(earliest - clock_.Monotonic());
      wait = std::clamp(wait, std::chrono::milliseconds(1), std::chrono::milliseconds(100));
      cv_.wait_for(lock, wait);
    }
  }
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard lock(mu_);
  active_.erase(key);
  if (again_.erase(key) && !shutdown_) {
    if (queued_.insert(key).second) order_.emplace(next_seq_++, key);
    cv_.notify_one();
  }
}

void WorkQueue::Shutdown() {
  std::lock_guard lock(mu_);
  shutdown_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Pending() const {
  std::lock_guard lock(mu_);
  return queued_.size() + delayed_.size();
}

}  // namespace warren::node
