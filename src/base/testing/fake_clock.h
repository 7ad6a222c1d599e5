#pragma once

#include <mutex>

#include "base/clock.h"

namespace warren::base {

// A clock that moves only when told. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(WallTime start = WallTime(std::chrono::seconds(1'800'000'000)))
      : wall_(start) {}

  WallTime Now() const override {
    std::lock_guard lock(mu_);
    return wall_;
  }
  MonoTime Monotonic() const override {
    std::lock_guard lock(mu_);
    return mono_;
  }
  void Advance(std::chrono::nanoseconds d) {
    std::lock_guard lock(mu_);
    wall_ += std::chrono::duration_cast<std::chrono::system_clock::duration>(d);
    mono_ += std::chrono::duration_cast<std::chrono::steady_clock::duration>(d);
  }

 private:
  mutable std::mutex mu_;
  WallTime wall_;    // guarded by mu_
  MonoTime mono_{};  // guarded by mu_
};

}  // namespace warren::base
