#pragma once

#include <sys/types.h>

#include <optional>

// The calling thread's CPU priority (its nice value; Linux keeps one per thread).

namespace warren::os {

// How much lower than normal background work runs: work nobody is waiting on (refilling a
// warm pool) yields the CPU to work somebody is (a claim, a cold create) when both want it, and
// still gets ~10 % of a busy core (CFS weights 1024 : 110 for nice 0 : 10).
inline constexpr int kBackgroundNiceIncrement = 10;

// Runs the calling thread `increment` nice steps lower than it was for the guard's scope, then
// as it was. Nested guards do not add up. Does nothing when the thread could not go back:
// raising a priority again needs CAP_SYS_NICE, and a thread left lowered would slow all its
// later work (checked once per process, on a thread started for the purpose).
class ScopedThreadNice {
 public:
  explicit ScopedThreadNice(int increment);
  ~ScopedThreadNice();
  ScopedThreadNice(const ScopedThreadNice&) = delete;
  ScopedThreadNice& operator=(const ScopedThreadNice&) = delete;

  bool lowered() const { return lowered_; }

 private:
  bool lowered_ = false;
};

// Inside a guard: the nice value the calling thread had before it, which processes it starts
// should be given back (they inherit the lowered one). nullopt outside any guard. No system
// call.
std::optional<int> NiceOutsideGuard();

// Gives `child`, just started by the calling thread, the priority the thread had outside its
// guard: a sandbox started by background work runs as any other once it is up. Nothing outside
// a guard. Leaves errno alone (a child sharing our memory may be reading it).
void GiveChildNiceOutsideGuard(pid_t child);

}  // namespace warren::os
