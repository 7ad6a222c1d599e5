#include "cli/exec_input.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace warren::cli {
namespace {

// SendInput carries base64 in JSON: keep each call well under envd's message limit.
constexpr size_t kReadChunk = 32 << 10;
constexpr char kEndOfTransmission = 0x04;

sigset_t PumpSignalSet() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : kPumpSignals) sigaddset(&set, s);
  return set;
}

}  // namespace

BlockSignals::BlockSignals() {
  sigset_t set = PumpSignalSet();
  pthread_sigmask(SIG_BLOCK, &set, &previous_);
}

BlockSignals::~BlockSignals() { pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

InputPump::InputPump(EnvdProcess& process, SignalPipe& signals, Options options)
    : process_(process), signals_(signals), options_(options) {}

InputPump::~InputPump() {
  Stop();
  if (thread_.joinable()) thread_.join();
}

Status InputPump::Start() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) return ErrnoError("pipe2", errno);
  wake_read_.reset(fds[0]);
  wake_write_.reset(fds[1]);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void InputPump::Wake() {
  const char byte = 0;
  [[maybe_unused]] ssize_t n = ::write(wake_write_.get(), &byte, 1);
}

void InputPump::SetPid(uint32_t pid) {
  {
    std::lock_guard lock(mu_);
    pid_ = pid;
  }
  Wake();
}

void InputPump::Stop() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  if (wake_write_) Wake();
}

std::optional<int> InputPump::Terminated() const {
  int s = terminated_.load();
  return s == 0 ? std::nullopt : std::optional<int>(s);
}

void InputPump::Loop() {
  // Only this thread takes the signals (BlockSignals holds them off the others).
  sigset_t set = PumpSignalSet();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
  auto log = base::Logger("cli");
  bool reading = options_.forward_stdin;
  std::string buf(kReadChunk, '\0');
  for (;;) {
    std::optional<uint32_t> pid;
    {
      std::lock_guard lock(mu_);
      if (stop_) return;
      pid = pid_;
    }
    pollfd fds[3] = {{wake_read_.get(), POLLIN, 0}, {signals_.fd(), POLLIN, 0}, {-1, POLLIN, 0}};
    // Input waits for the pid: there is nothing to send it to before.
    if (reading && pid && !terminated_.load()) fds[2].fd = options_.stdin_fd;
    if (::poll(fds, 3, -1) < 0) {
      if (errno == EINTR) continue;
      log->error("exec input: poll: {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents) {
      char drain[64];
      while (::read(wake_read_.get(), drain, sizeof drain) > 0) {
      }
    }
    if (fds[1].revents) {
      for (int signo : signals_.Drain()) {
        if (signo == SIGWINCH) {
          if (!pid || !options_.pty) continue;
          auto size = SizeOf(options_.terminal_fd);
          if (size) (void)process_.Resize(*pid, *size);
          continue;
        }
        terminated_.store(signo);
        if (pid) (void)process_.Kill(*pid);
      }
    }
    if (fds[2].fd >= 0 && fds[2].revents) {
      ssize_t n = ::read(options_.stdin_fd, buf.data(), buf.size());
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      Status sent;
      if (n > 0) {
        sent = process_.SendInput(*pid, std::string_view(buf.data(), n), options_.pty);
      } else {
        // EOF (or an unreadable stdin): a pipe is closed, a PTY gets ^D as a terminal would.
        reading = false;
        sent = options_.pty ? process_.SendInput(*pid, std::string_view(&kEndOfTransmission, 1),
                                                 /*pty=*/true)
                            : process_.CloseStdin(*pid);
      }
      // The process may have ended between the read and the send: its output stream ends this.
      if (!sent.ok()) {
        log->debug("exec input: {}", sent.ToString());
        reading = false;
      }
    }
  }
}

}  // namespace warren::cli
