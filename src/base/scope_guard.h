#pragma once

#include <utility>

namespace warren::base {

// Runs a callable when the scope ends unless dismissed: the cleanup half of a multi-step setup
// that must be undone if a later step fails.
//   auto undo = base::ScopeExit([&] { rmdir(path); });
//   ...; undo.Dismiss();  // success: keep it
template <typename F>
class [[nodiscard]] ScopeGuard {
 public:
  explicit ScopeGuard(F f) : f_(std::move(f)) {}
  ScopeGuard(ScopeGuard&& other) noexcept : f_(std::move(other.f_)), active_(other.active_) {
    other.active_ = false;
  }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;
  ScopeGuard& operator=(ScopeGuard&&) = delete;
  ~ScopeGuard() {
    if (active_) f_();
  }
  void Dismiss() { active_ = false; }

 private:
  F f_;
  bool active_ = true;
};

template <typename F>
ScopeGuard<F> ScopeExit(F f) {
  return ScopeGuard<F>(std::move(f));
}

}  // namespace warren::base
