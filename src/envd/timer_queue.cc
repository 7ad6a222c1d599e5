#include "envd/timer_queue.h"

namespace warren::envd {

TimerQueue::TimerQueue() : thread_([this] { Run(); }) {}

TimerQueue::~TimerQueue() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

TimerQueue::TimerId TimerQueue::Schedule(base::MonoTime at, std::function<void()> callback) {
  TimerId id;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    queue_.emplace(at, id);
    callbacks_.emplace(id, std::move(callback));
  }
  changed_.notify_all();
  return id;
}

TimerQueue::TimerId TimerQueue::ScheduleAfter(std::chrono::milliseconds delay,
                                              std::function<void()> callback) {
  return Schedule(std::chrono::steady_clock::now() + delay, std::move(callback));
}

void TimerQueue::Cancel(TimerId id) {
  std::lock_guard lock(mu_);
  callbacks_.erase(id);  // its queue entry is skipped when it comes up
}

void TimerQueue::Run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    if (queue_.empty()) {
      changed_.wait(lock);
      continue;
    }
    auto first = queue_.begin();
    if (first->first > std::chrono::steady_clock::now()) {
      changed_.wait_until(lock, first->first);
      continue;
    }
    TimerId id = first->second;
    queue_.erase(first);
    auto it = callbacks_.find(id);
    if (it == callbacks_.end()) continue;  // cancelled
    auto callback = std::move(it->second);
    callbacks_.erase(it);
    lock.unlock();
    callback();
    lock.lock();
  }
}

}  // namespace warren::envd
