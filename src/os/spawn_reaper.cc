#include "os/spawn_reaper.h"

#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace warren::os {

ChildReaper& ChildReaper::Get() {
  // Never destroyed: the thread runs until the process exits.
  static ChildReaper* reaper = new ChildReaper();  // NOLINT: intentional leak of a singleton
  return *reaper;
}

ChildReaper::ChildReaper() {
  std::thread([this] { Run(); }).detach();
}

Result<SpawnedChild> ChildReaper::Spawn(const SpawnOptions& options, ExitCallback on_exit) {
  std::unique_lock lock(mu_);
  auto child = os::Spawn(options);
  if (child.ok()) watch_.emplace(child->pid, std::move(on_exit));
  ++spawn_count_;
  lock.unlock();
  spawned_.notify_all();
  return child;
}

void ChildReaper::Run() {
  for (;;) {
    uint64_t seen;
    {
      std::lock_guard lock(mu_);
      seen = spawn_count_;
    }
    int status = 0;
    pid_t pid = waitpid(-1, &status, __WALL);
    if (pid < 0) {
      if (errno == EINTR) continue;
      // No children: sleep until one is spawned. Orphans re-parented to us do not notify, so
      // look again every second.
      std::unique_lock lock(mu_);
      spawned_.wait_for(lock, std::chrono::seconds(1), [&] { return spawn_count_ != seen; });
      continue;
    }
    ExitCallback callback;
    {
      std::lock_guard lock(mu_);
      auto it = watch_.find(pid);
      if (it != watch_.end()) {
        callback = std::move(it->second);
        watch_.erase(it);
      }
    }
    if (callback) {
      callback(status);
    } else {
      orphans_reaped_.fetch_add(1);
    }
  }
}

}  // namespace warren::os
