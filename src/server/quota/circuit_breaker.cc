#include "server/quota/circuit_breaker.h"

namespace warren::server::quota {

bool CircuitBreaker::Allow() {
  std::lock_guard lock(mu_);
  if (state_ == State::kClosed) return true;
  if (state_ == State::kOpen) {
    if (clock_.Monotonic() - opened_at_ < options_.open_for) return false;
    state_ = State::kHalfOpen;
    probing_ = false;
  }
  if (probing_) return false;
  probing_ = true;
  return true;
}

void CircuitBreaker::Success() {
  std::lock_guard lock(mu_);
  state_ = State::kClosed;
  failures_ = 0;
  probing_ = false;
}

void CircuitBreaker::Failure() {
  std::lock_guard lock(mu_);
  probing_ = false;
  if (state_ == State::kHalfOpen || ++failures_ >= options_.failures_to_open) {
    state_ = State::kOpen;
    opened_at_ = clock_.Monotonic();
    failures_ = 0;
  }
}

CircuitBreaker::State CircuitBreaker::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

}  // namespace warren::server::quota
