#pragma once

#include <chrono>
#include <memory>

namespace warren::base {

using WallTime = std::chrono::system_clock::time_point;
using MonoTime = std::chrono::steady_clock::time_point;

// Time as the system sees it. Code that makes decisions from time takes a Clock& so tests can
// inject a FakeClock (base/testing/fake_clock.h). Implementations are thread-safe.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual WallTime Now() const = 0;
  virtual MonoTime Monotonic() const = 0;
};

// The process-wide real clock; never destroyed.
Clock& RealClock();

}  // namespace warren::base
