#include "runtime/gvisor/mux_init.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace warren::runtime::gvisor::mux {
namespace {

// Signals pid 1 passes on to the command (SIGKILL and SIGSTOP cannot be caught; gVisor's
// `runsc kill` of pid 1 reaches us as these).
constexpr int kForwarded[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

void Say(const std::string& text) {
  std::string line = "warren-gvisor-init: " + text + "\n";
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
}

}  // namespace

void InitRelay::OnControlFrame(const Frame& f) {
  if (f.type != FrameType::kOpen || f.payload.size() != 2 || streams_.count(f.stream)) {
    // Only the host opens streams; anything else from it is ignored.
    return;
  }
  uint16_t port = static_cast<uint16_t>((static_cast<unsigned char>(f.payload[0]) << 8) |
                                        static_cast<unsigned char>(f.payload[1]));
  base::UniqueFd fd(socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd) {
    Send(FrameType::kOpenFail, f.stream, U32(static_cast<uint32_t>(errno)));
    return;
  }
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int r = connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  if (r != 0 && errno != EINPROGRESS) {
    Send(FrameType::kOpenFail, f.stream, U32(static_cast<uint32_t>(errno)));
    return;
  }
  Stream& s = streams_[f.stream];
  s.fd = std::move(fd);
  s.connecting = r != 0;
  if (!s.connecting) Send(FrameType::kOpenOk, f.stream);
}

void InitRelay::OnConnected(uint32_t id, Stream& s) {
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(s.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err == EINPROGRESS) return;
  if (err != 0) {
    streams_.erase(id);
    Send(FrameType::kOpenFail, id, U32(static_cast<uint32_t>(err)));
    return;
  }
  s.connecting = false;
  Send(FrameType::kOpenOk, id);
}

void InitRelay::AddPollFds(std::vector<pollfd>& fds) {
  if (signal_fd_ >= 0) fds.push_back({signal_fd_, POLLIN, 0});
}

void InitRelay::ReapChildren() {
  for (;;) {
    int status = 0;
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == command_) {
      wait_status_ = status;
      std::string payload;
      payload += U32(WIFEXITED(status) ? static_cast<uint32_t>(WEXITSTATUS(status)) : 0);
      payload += U32(WIFSIGNALED(status) ? static_cast<uint32_t>(WTERMSIG(status)) : 0);
      Send(FrameType::kExit, 0, payload);
      command_ = -1;
      Stop();
    }
  }
}

void InitRelay::OnPolled(const pollfd* fds, size_t n) {
  if (n == 0 || !(fds[0].revents & POLLIN)) return;
  signalfd_siginfo info;
  while (read(signal_fd_, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
    if (info.ssi_signo == SIGCHLD) {
      ReapChildren();
    } else if (command_ > 0) {
      kill(command_, static_cast<int>(info.ssi_signo));
    }
  }
}

int RunInit(const std::vector<char*>& command, const std::vector<std::string>& unset) {
  if (command.empty() || command.back() != nullptr || command.size() < 2) {
    Say("usage: warren-gvisor-init init -- <command...>");
    return 2;
  }
  for (const std::string& name : unset) unsetenv(name.c_str());
  signal(SIGPIPE, SIG_IGN);
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  for (int s : kForwarded) sigaddset(&set, s);
  sigset_t old;
  sigprocmask(SIG_BLOCK, &set, &old);
  base::UniqueFd sigfd(signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC));
  if (!sigfd) {
    Say(std::string("signalfd: ") + strerror(errno));
    return 1;
  }
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) {
    Say(std::string("pipe: ") + strerror(errno));
    return 1;
  }
  base::UniqueFd report_r(report[0]), report_w(report[1]);
  pid_t child = fork();
  if (child < 0) {
    Say(std::string("fork: ") + strerror(errno));
    return 1;
  }
  if (child == 0) {
    // The channel stays ours: the command reads nothing from it and writes to the log.
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd >= 0) dup2(null_fd, STDIN_FILENO);
    dup2(STDERR_FILENO, STDOUT_FILENO);
    sigprocmask(SIG_SETMASK, &old, nullptr);
    execvp(command[0], command.data());
    int err = errno;
    [[maybe_unused]] ssize_t ignored = write(report_w.get(), &err, sizeof err);
    _exit(127);
  }
  report_w.reset();
  int err = 0;
  ssize_t got;
  do {
    got = read(report_r.get(), &err, sizeof err);
  } while (got < 0 && errno == EINTR);

  fcntl(STDIN_FILENO, F_SETFL, fcntl(STDIN_FILENO, F_GETFL) | O_NONBLOCK);
  fcntl(STDOUT_FILENO, F_SETFL, fcntl(STDOUT_FILENO, F_GETFL) | O_NONBLOCK);
  fcntl(STDIN_FILENO, F_SETFD, FD_CLOEXEC);
  fcntl(STDOUT_FILENO, F_SETFD, FD_CLOEXEC);
  InitRelay relay(STDIN_FILENO, STDOUT_FILENO, child, sigfd.get());
  if (got > 0) {
    std::string message = std::string(command[0]) + ": " + strerror(err);
    Say("cannot run " + message);
    relay.Announce(FrameType::kExecFailed, message);
    relay.FlushChannel(5000);
    int status = 0;
    waitpid(child, &status, 0);
    return 127;
  }
  relay.Announce(FrameType::kReady, U32(static_cast<uint32_t>(child)));
  relay.Run();
  // The command ended (Run returns only then): its exit is queued; the host must have it.
  relay.FlushChannel(5000);
  int status = relay.wait_status();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace warren::runtime::gvisor::mux
