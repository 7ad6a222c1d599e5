#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::runtime::native {

// Watches sandbox pidfds with one epoll thread and calls `on_exit(id)` when a process exits,
// so exits are noticed (and zombies reaped by the callback) without anyone asking. The
// callback runs on the reaper thread with no reaper lock held. Thread-safe. The destructor
// stops the thread; it does not touch the processes.
class Reaper {
 public:
  using OnExit = std::function<void(const std::string& id)>;
  static Result<std::unique_ptr<Reaper>> Start(OnExit on_exit);
  ~Reaper();
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

  // Starts watching `pidfd` (borrowed: the caller keeps it open until Unwatch).
  Status Watch(const std::string& id, int pidfd);
  // Stops watching; safe to call for ids not watched.
  void Unwatch(const std::string& id);

 private:
  Reaper(OnExit on_exit, base::UniqueFd epoll, base::UniqueFd wake);
  void Run();

  const OnExit on_exit_;
  base::UniqueFd epoll_;
  base::UniqueFd wake_;  // eventfd: wakes the thread to stop
  std::mutex mu_;
  std::map<std::string, std::pair<int, uint64_t>> watched_;  // guarded by mu_: id → fd, token
  std::map<uint64_t, std::string> tokens_;                   // guarded by mu_
  uint64_t next_token_ = 1;                                  // guarded by mu_
  std::thread thread_;
};

}  // namespace warren::runtime::native
