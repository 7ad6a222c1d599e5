#include "os/inotify_hub.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>

namespace warren::os {

Result<std::unique_ptr<InotifyHub>> InotifyHub::Create() {
  ASSIGN_OR_RETURN(Inotify inotify, Inotify::Create());
  base::UniqueFd stop(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!stop) return ErrnoError("eventfd", errno);
  // Not make_unique: the constructor is private.
  std::unique_ptr<InotifyHub> hub(new InotifyHub(std::move(inotify), std::move(stop)));
  return hub;
}

InotifyHub::InotifyHub(Inotify inotify, base::UniqueFd stop)
    : inotify_(std::move(inotify)), stop_(std::move(stop)), thread_([this] { Run(); }) {}

InotifyHub::~InotifyHub() {
  uint64_t one = 1;
  ssize_t ignored = write(stop_.get(), &one, sizeof one);
  (void)ignored;
  thread_.join();
}

Result<InotifyHub::Watch> InotifyHub::Add(const std::string& path, uint32_t mask) {
  // Under the lock, so the reader cannot count this file's first event before it is known.
  std::lock_guard lock(mu_);
  ASSIGN_OR_RETURN(int wd, inotify_.AddWatch(path, mask | IN_MASK_ADD));
  File& file = files_[wd];
  file.gone = false;  // a removed file's number, given out again: watched anew
  ++file.watches;
  return Watch(this, wd, file.events);
}

size_t InotifyHub::watches() const {
  std::lock_guard lock(mu_);
  return files_.size();
}

void InotifyHub::Release(int wd) {
  std::lock_guard lock(mu_);
  auto it = files_.find(wd);
  if (it == files_.end() || --it->second.watches > 0) return;
  if (!it->second.gone) inotify_.RemoveWatch(wd);
  files_.erase(it);
}

void InotifyHub::Run() {
  for (;;) {
    pollfd fds[2] = {{inotify_.fd(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;
    auto events = inotify_.ReadEvents();
    if (!events.ok()) return;  // the waits fall back to their timeouts
    if (events->empty()) continue;
    {
      std::lock_guard lock(mu_);
      for (const InotifyEvent& e : *events) {
        auto it = files_.find(e.wd);
        if (it == files_.end()) continue;  // removed since; its late events are nobody's
        ++it->second.events;
        if (e.mask & IN_IGNORED) it->second.gone = true;
      }
    }
    changed_.notify_all();
  }
}

InotifyHub::Watch::Watch(Watch&& other) noexcept
    : hub_(other.hub_), wd_(other.wd_), seen_(other.seen_) {
  other.hub_ = nullptr;
}

InotifyHub::Watch::~Watch() {
  if (hub_ != nullptr) hub_->Release(wd_);
}

bool InotifyHub::Watch::Wait(std::chrono::microseconds timeout) {
  std::unique_lock lock(hub_->mu_);
  auto arrived = [&] {
    auto it = hub_->files_.find(wd_);
    return it == hub_->files_.end() || it->second.events != seen_;
  };
  if (!hub_->changed_.wait_for(lock, timeout, arrived)) return false;
  auto it = hub_->files_.find(wd_);
  if (it != hub_->files_.end()) seen_ = it->second.events;
  return true;
}

}  // namespace warren::os
