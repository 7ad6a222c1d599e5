#include "cli/signal_pipe.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <memory>

namespace warren::cli {
namespace {

std::atomic<int> g_write_fd{-1};

void OnSignal(int signo) {
  const int saved_errno = errno;
  const unsigned char byte = static_cast<unsigned char>(signo);
  // Non-blocking: a full pipe already holds enough wake-ups to lose this one.
  [[maybe_unused]] ssize_t n = ::write(g_write_fd.load(), &byte, 1);
  errno = saved_errno;
}

}  // namespace

Result<std::unique_ptr<SignalPipe>> SignalPipe::Install(std::initializer_list<int> signals) {
  std::unique_ptr<SignalPipe> p(new SignalPipe());
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoError("pipe2", errno);
  p->read_.reset(fds[0]);
  p->write_.reset(fds[1]);
  int expected = -1;
  if (!g_write_fd.compare_exchange_strong(expected, fds[1])) {
    return FailedPreconditionError("a SignalPipe is installed already");
  }
  for (int signo : signals) {
    struct sigaction sa {};
    sa.sa_handler = OnSignal;
    sigemptyset(&sa.sa_mask);
    // SA_RESTART: blocking calls elsewhere (the HTTP stream) carry on; the poll loop sees it.
    sa.sa_flags = SA_RESTART;
    struct sigaction old {};
    if (::sigaction(signo, &sa, &old) != 0) return ErrnoError("sigaction", errno);
    p->previous_.emplace_back(signo, old);
  }
  return p;
}

SignalPipe::~SignalPipe() {
  for (auto it = previous_.rbegin(); it != previous_.rend(); ++it) {
    ::sigaction(it->first, &it->second, nullptr);
  }
  int mine = write_.get();
  g_write_fd.compare_exchange_strong(mine, -1);
}

std::vector<int> SignalPipe::Drain() {
  std::vector<int> out;
  unsigned char buf[64];
  for (;;) {
    ssize_t n = ::read(read_.get(), buf, sizeof buf);
    if (n <= 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

}  // namespace warren::cli
