#include "os/thread_priority.h"

#include <sys/resource.h>

#include <cerrno>
#include <thread>

namespace warren::os {
namespace {

// The nice value the thread had before its outermost guard, while one is active.
thread_local std::optional<int> nice_outside_guard;

// Linux keeps the nice value per thread: PRIO_PROCESS with who = 0 is the calling thread.
constexpr id_t kThisThread = 0;

std::optional<int> ReadNice() {
  errno = 0;
  int nice = ::getpriority(PRIO_PROCESS, kThisThread);
  if (nice == -1 && errno != 0) return std::nullopt;
  return nice;
}

// Whether a thread may take back a priority it gave up, tried on a thread of its own so no
// thread that does real work is ever left lowered.
bool CanRestore() {
  static const bool can = [] {
    bool ok = false;
    std::thread probe([&] {
      std::optional<int> nice = ReadNice();
      if (!nice || *nice >= 19) return;
      if (::setpriority(PRIO_PROCESS, kThisThread, *nice + 1) != 0) return;
      ok = ::setpriority(PRIO_PROCESS, kThisThread, *nice) == 0;
    });
    probe.join();
    return ok;
  }();
  return can;
}

}  // namespace

ScopedThreadNice::ScopedThreadNice(int increment) {
  if (nice_outside_guard || increment <= 0 || !CanRestore()) return;
  std::optional<int> nice = ReadNice();
  if (!nice) return;
  if (::setpriority(PRIO_PROCESS, kThisThread, *nice + increment) != 0) return;
  nice_outside_guard = *nice;
  lowered_ = true;
}

ScopedThreadNice::~ScopedThreadNice() {
  if (!lowered_) return;
  // CanRestore() said this works for this process.
  (void)::setpriority(PRIO_PROCESS, kThisThread, *nice_outside_guard);
  nice_outside_guard.reset();
}

std::optional<int> NiceOutsideGuard() { return nice_outside_guard; }

void GiveChildNiceOutsideGuard(pid_t child) {
  if (!nice_outside_guard) return;
  int saved = errno;
  (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(child), *nice_outside_guard);
  errno = saved;
}

}  // namespace warren::os
