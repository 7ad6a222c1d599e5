#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "base/clock.h"

namespace warren::envd {

// One thread that runs callbacks at monotonic times: stream keepalives and deadlines, process
// lifetimes, expiry of finished processes. Callbacks run on the timer thread, one at a time, and
// must not block. Thread-safe; the destructor cancels what is pending and joins the thread.
class TimerQueue {
 public:
  using TimerId = uint64_t;

  TimerQueue();
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  TimerId Schedule(base::MonoTime at, std::function<void()> callback);
  TimerId ScheduleAfter(std::chrono::milliseconds delay, std::function<void()> callback);
  // Cancels a timer that has not fired yet (no-op otherwise).
  void Cancel(TimerId id);

 private:
  void Run();

  std::mutex mu_;
  std::condition_variable changed_;
  bool stopping_ = false;                               // guarded by mu_
  TimerId next_id_ = 1;                                 // guarded by mu_
  std::multimap<base::MonoTime, TimerId> queue_;        // guarded by mu_
  std::map<TimerId, std::function<void()>> callbacks_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace warren::envd
