#include "os/netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"

namespace warren::os {
namespace {

// The namespace this thread started in, opened once per thread.
int OwnNetnsFd() {
  thread_local base::UniqueFd own(open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
  return own.get();
}

}  // namespace

Result<base::UniqueFd> SocketInNetns(int ns_fd, int domain, int type, int protocol) {
  int home = OwnNetnsFd();
  if (home < 0) return ErrnoError("open /proc/thread-self/ns/net", errno);
  if (setns(ns_fd, CLONE_NEWNET) != 0) return ErrnoError("setns into sandbox netns", errno);
  int fd = socket(domain, type | SOCK_CLOEXEC, protocol);
  int err = errno;
  // Failing to return would leave this thread in a sandbox's namespace: every later socket it
  // made would land there. That is not recoverable.
  CHECK_MSG(setns(home, CLONE_NEWNET) == 0, "setns back to own netns: " << strerror(errno));
  if (fd < 0) return ErrnoError("socket in sandbox netns", err);
  return base::UniqueFd(fd);
}

Status ConnectLoopback(int fd, uint16_t port, std::chrono::milliseconds timeout) {
  sockaddr_in addr;
  memset(&addr, 0, sizeof addr);
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return Status::Ok();
  if (errno == ECONNREFUSED) {
    return UnavailableError(fmt::format("nothing listens on 127.0.0.1:{} in the sandbox", port));
  }
  if (errno != EINPROGRESS) return ErrnoError(fmt::format("connect 127.0.0.1:{}", port), errno);
  pollfd p = {fd, POLLOUT, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return DeadlineExceededError(
        fmt::format("connect 127.0.0.1:{} timed out after {} ms", port, timeout.count()));
  }
  // Writable with no error or hang-up flagged: connected, no need to ask (one syscall less on
  // the gateway's dial path).
  if (n == 1 && p.revents == POLLOUT) return Status::Ok();
  int soerr = 0;
  socklen_t len = sizeof soerr;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) != 0) soerr = errno;
  if (soerr == ECONNREFUSED) {
    return UnavailableError(fmt::format("nothing listens on 127.0.0.1:{} in the sandbox", port));
  }
  if (soerr != 0) return ErrnoError(fmt::format("connect 127.0.0.1:{}", port), soerr);
  return Status::Ok();
}

Result<base::UniqueFd> DialInNetns(int ns_fd, uint16_t port, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(base::UniqueFd fd, SocketInNetns(ns_fd, AF_INET, SOCK_STREAM | SOCK_NONBLOCK));
  RETURN_IF_ERROR(ConnectLoopback(fd.get(), port, timeout));
  return fd;
}

Result<base::UniqueFd> DialInNetnsOfPid(pid_t pid, uint16_t port,
                                        std::chrono::milliseconds timeout) {
  base::UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) return ErrnoError(fmt::format("pidfd_open({})", pid), errno);
  return DialInNetns(pidfd.get(), port, timeout);
}

Result<std::unique_ptr<NetnsDialer>> NetnsDialer::Create(int ns_fd) {
  std::unique_ptr<NetnsDialer> d(new NetnsDialer());
  int dup_fd = fcntl(ns_fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return ErrnoError("dup netns fd", errno);
  d->thread_ = std::thread([raw = d.get(), dup_fd] { raw->Run(dup_fd); });
  std::unique_lock lock(d->mu_);
  d->cv_.wait(lock, [&] { return d->started_; });
  if (d->start_err_ != 0) {
    int err = d->start_err_;
    lock.unlock();
    d->thread_.join();
    d->thread_ = std::thread();
    return ErrnoError("setns of dialer thread", err);
  }
  return d;
}

NetnsDialer::~NetnsDialer() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NetnsDialer::Run(int ns_fd) {
  // The thread enters the namespace for good: it exits instead of ever returning to the host's.
  int rc = setns(ns_fd, CLONE_NEWNET);
  int err = errno;
  close(ns_fd);
  {
    std::lock_guard lock(mu_);
    started_ = true;
    start_err_ = rc == 0 ? 0 : err;
  }
  cv_.notify_all();
  if (rc != 0) return;
  std::unique_lock lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || requested_; });
    if (stop_) return;
    requested_ = false;
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    err_ = fd_ < 0 ? errno : 0;
    answered_ = true;
    cv_.notify_all();
  }
}

Result<base::UniqueFd> NetnsDialer::Dial(uint16_t port, std::chrono::milliseconds timeout) {
  base::UniqueFd fd;
  {
    std::unique_lock lock(mu_);
    // One request at a time: wait for any earlier caller's answer to be taken.
    cv_.wait(lock, [&] { return !requested_ && !answered_; });
    requested_ = true;
    cv_.notify_all();
    cv_.wait(lock, [&] { return answered_; });
    answered_ = false;
    if (fd_ < 0) {
      int err = err_;
      cv_.notify_all();
      return ErrnoError("socket in dialer thread", err);
    }
    fd = base::UniqueFd(std::exchange(fd_, -1));
    cv_.notify_all();
  }
  RETURN_IF_ERROR(ConnectLoopback(fd.get(), port, timeout));
  return fd;
}

int BringLoopbackUpRaw() noexcept {
  int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (s < 0) return -errno;
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  memcpy(ifr.ifr_name, "lo", 3);
  int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
  if (rc == 0) {
    ifr.ifr_flags = static_cast<short>(ifr.ifr_flags | IFF_UP | IFF_RUNNING);
    rc = ioctl(s, SIOCSIFFLAGS, &ifr);
  }
  int err = errno;
  close(s);
  return rc == 0 ? 0 : -err;
}

}  // namespace warren::os
