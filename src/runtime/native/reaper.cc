#include "runtime/native/reaper.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

namespace warren::runtime::native {

Result<std::unique_ptr<Reaper>> Reaper::Start(OnExit on_exit) {
  base::UniqueFd ep(epoll_create1(EPOLL_CLOEXEC));
  if (!ep) return ErrnoError("epoll_create1", errno);
  base::UniqueFd wake(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake) return ErrnoError("eventfd", errno);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = 0;  // token 0 is the wake fd
  if (epoll_ctl(ep.get(), EPOLL_CTL_ADD, wake.get(), &ev) != 0) {
    return ErrnoError("epoll_ctl", errno);
  }
  std::unique_ptr<Reaper> r(new Reaper(std::move(on_exit), std::move(ep), std::move(wake)));
  r->thread_ = std::thread([raw = r.get()] { raw->Run(); });
  return r;
}

Reaper::Reaper(OnExit on_exit, base::UniqueFd epoll, base::UniqueFd wake)
    : on_exit_(std::move(on_exit)), epoll_(std::move(epoll)), wake_(std::move(wake)) {}

Reaper::~Reaper() {
  uint64_t one = 1;
  if (write(wake_.get(), &one, sizeof one) < 0) {
    // The eventfd cannot be full with one writer; nothing else can go wrong here.
  }
  if (thread_.joinable()) thread_.join();
}

Status Reaper::Watch(const std::string& id, int pidfd) {
  std::lock_guard lock(mu_);
  uint64_t token = next_token_++;
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = token;
  if (epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, pidfd, &ev) != 0) {
    return ErrnoError("epoll_ctl add pidfd of " + id, errno);
  }
  watched_[id] = {pidfd, token};
  tokens_[token] = id;
  return Status::Ok();
}

void Reaper::Unwatch(const std::string& id) {
  std::lock_guard lock(mu_);
  auto it = watched_.find(id);
  if (it == watched_.end()) return;
  epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, it->second.first, nullptr);
  tokens_.erase(it->second.second);
  watched_.erase(it);
}

void Reaper::Run() {
  std::vector<epoll_event> events(64);
  for (;;) {
    int n = epoll_wait(epoll_.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return;
    }
    std::vector<std::string> exited;
    {
      std::lock_guard lock(mu_);
      for (int i = 0; i < n; ++i) {
        uint64_t token = events[static_cast<size_t>(i)].data.u64;
        if (token == 0) return;  // stop
        auto it = tokens_.find(token);
        if (it == tokens_.end()) continue;  // unwatched meanwhile
        // An exited pidfd stays readable: stop watching it so it does not fire again.
        std::string id = it->second;
        auto w = watched_.find(id);
        if (w != watched_.end()) {
          epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, w->second.first, nullptr);
          watched_.erase(w);
        }
        tokens_.erase(it);
        exited.push_back(std::move(id));
      }
    }
    for (const std::string& id : exited) on_exit_(id);
  }
}

}  // namespace warren::runtime::native
