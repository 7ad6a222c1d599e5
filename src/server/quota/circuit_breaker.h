#pragma once

#include <chrono>
#include <mutex>

#include "base/clock.h"

namespace warren::server::quota {

// Stops calling a backend that keeps failing (the reference's quota breaker,
// openkruise-agents.md §3.10): closed until `failures_to_open` failures in a row; then open
// for `open_for`, when Allow says no without trying; then half-open, when exactly one caller is
// let through as a probe — its success closes the breaker, its failure opens it again.
// Thread-safe; borrows the clock.
class CircuitBreaker {
 public:
  struct Options {
    int failures_to_open = 3;
    std::chrono::milliseconds open_for{30'000};
  };
  enum class State { kClosed, kOpen, kHalfOpen };

  CircuitBreaker(Options options, base::Clock& clock) : options_(options), clock_(clock) {}

  // Whether a call may go to the backend now. Each true must be followed by Success or Failure.
  bool Allow();
  void Success();
  void Failure();
  State state() const;

 private:
  const Options options_;
  base::Clock& clock_;
  mutable std::mutex mu_;
  State state_ = State::kClosed;  // guarded by mu_
  int failures_ = 0;              // guarded by mu_
  base::MonoTime opened_at_{};    // guarded by mu_
  bool probing_ = false;          // guarded by mu_: the half-open probe is out
};

}  // namespace warren::server::quota
