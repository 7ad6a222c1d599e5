#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace warren::net::testing {

// A one-shot event between threads in tests. Thread-safe.
class Notification {
 public:
  void Notify() {
    std::lock_guard lock(mu_);
    notified_ = true;
    cv_.notify_all();
  }
  // True if notified within `timeout`.
  bool WaitFor(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return notified_; });
  }
  bool HasBeenNotified() {
    std::lock_guard lock(mu_);
    return notified_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;
};

}  // namespace warren::net::testing
