#include "runtime/gvisor/mux_shim.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

namespace warren::runtime::gvisor::mux {
namespace {

constexpr size_t kMaxRequestLine = 64;

void Say(const std::string& text) {
  std::string line = "warren-gvisor-init shim: " + text + "\n";
  [[maybe_unused]] ssize_t ignored = write(STDERR_FILENO, line.data(), line.size());
}

// Best effort: the reply lines are a few bytes on a fresh socket's empty buffer.
void Reply(int fd, const std::string& text) {
  [[maybe_unused]] ssize_t ignored = send(fd, text.data(), text.size(), MSG_NOSIGNAL);
}

}  // namespace

uint32_t FreeStreamId(uint32_t next, const std::function<bool(uint32_t)>& in_use) {
  uint32_t id = next | 1;  // odd: never 0, the id that means every stream
  while (in_use(id)) id += 2;
  return id;
}

void ShimRelay::Request(base::UniqueFd fd, const std::string& line) {
  if (line.rfind("DIAL ", 0) == 0) {
    char* end = nullptr;
    unsigned long port = strtoul(line.c_str() + 5, &end, 10);
    if (end == line.c_str() + 5 || *end != '\0' || port == 0 || port > 65535) {
      Reply(fd.get(), "ERR " + std::to_string(EINVAL) + "\n");
      return;
    }
    const uint32_t id =
        FreeStreamId(next_stream_, [this](uint32_t i) { return streams_.count(i) != 0; });
    next_stream_ = id + 2;
    Stream& s = streams_[id];
    s.fd = std::move(fd);
    s.reading = false;  // until the init has connected it
    std::string payload(2, '\0');
    payload[0] = static_cast<char>(port >> 8);
    payload[1] = static_cast<char>(port);
    Send(FrameType::kOpen, id, payload);
    return;
  }
  if (line == "READY") {
    ready_waiters_.push_back(std::move(fd));
    AnswerReady();
    return;
  }
  Reply(fd.get(), "ERR " + std::to_string(EINVAL) + "\n");
}

void ShimRelay::AnswerReady() {
  if (ready_.empty()) return;
  for (base::UniqueFd& fd : ready_waiters_) Reply(fd.get(), ready_);
  ready_waiters_.clear();
}

void ShimRelay::OnControlFrame(const Frame& f) {
  switch (f.type) {
    case FrameType::kOpenOk: {
      auto it = streams_.find(f.stream);
      if (it == streams_.end() || it->second.reading) return;
      it->second.to_socket.insert(0, "OK\n");
      it->second.exempt += 3;
      it->second.reading = true;
      return;
    }
    case FrameType::kOpenFail: {
      auto it = streams_.find(f.stream);
      if (it == streams_.end() || it->second.reading) return;
      it->second.to_socket = "ERR " + std::to_string(ReadU32(f.payload)) + "\n";
      it->second.exempt = it->second.to_socket.size();
      it->second.close_after_flush = true;
      return;
    }
    case FrameType::kReady:
      if (ready_.empty()) ready_ = "OK " + std::to_string(ReadU32(f.payload)) + "\n";
      AnswerReady();
      return;
    case FrameType::kExecFailed: {
      std::string why = f.payload.substr(0, 512);
      for (char& c : why) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      if (ready_.empty()) ready_ = "ERR exec " + why + "\n";
      AnswerReady();
      return;
    }
    case FrameType::kExit: {
      // The init reports once; more would be the sandbox writing frames into pid 1's stdout
      // (each one a file written and fsynced on the host).
      if (f.payload.size() != 8 || exit_written_) return;
      exit_written_ = true;
      std::string text = std::to_string(static_cast<int32_t>(ReadU32(f.payload))) + " " +
                         std::to_string(static_cast<int32_t>(ReadU32(f.payload.substr(4)))) + "\n";
      std::string tmp = exit_file_ + ".tmp";
      int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (fd >= 0) {
        [[maybe_unused]] ssize_t ignored = write(fd, text.data(), text.size());
        fsync(fd);
        close(fd);
        rename(tmp.c_str(), exit_file_.c_str());
      }
      if (ready_.empty()) ready_ = "ERR exited\n";
      AnswerReady();
      return;
    }
    default:
      return;  // kOpen and the rest are not the sandbox's to send
  }
}

void ShimRelay::OnChannelClosed() {
  if (ready_.empty()) ready_ = "ERR exited\n";
  AnswerReady();
  Stop();
}

void ShimRelay::AddPollFds(std::vector<pollfd>& fds) {
  fds.push_back({listener_, POLLIN, 0});
  for (const Pending& p : pending_) fds.push_back({p.fd.get(), POLLIN, 0});
}

void ShimRelay::OnPolled(const pollfd* fds, size_t n) {
  // The pending clients first: their indices are those AddPollFds gave them.
  std::vector<Pending> still;
  std::vector<std::pair<base::UniqueFd, std::string>> complete;
  for (size_t i = 1; i < n && i - 1 < pending_.size(); ++i) {
    Pending& p = pending_[i - 1];
    if (fds[i].revents == 0) {
      still.push_back(std::move(p));
      continue;
    }
    char buf[kMaxRequestLine];
    ssize_t got = recv(p.fd.get(), buf, sizeof buf, 0);
    if (got < 0 && (errno == EAGAIN || errno == EINTR)) {
      still.push_back(std::move(p));
      continue;
    }
    if (got <= 0) continue;  // gone before asking
    p.line.append(buf, static_cast<size_t>(got));
    size_t nl = p.line.find('\n');
    if (nl == std::string::npos) {
      if (p.line.size() < kMaxRequestLine) still.push_back(std::move(p));
      continue;
    }
    // Nothing may follow the request before the reply: the client waits for it.
    complete.emplace_back(std::move(p.fd), p.line.substr(0, nl));
  }
  pending_ = std::move(still);
  for (auto& c : complete) Request(std::move(c.first), c.second);
  if (n > 0 && (fds[0].revents & POLLIN)) {
    for (;;) {
      base::UniqueFd fd(accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
      if (!fd) break;
      pending_.push_back(Pending{std::move(fd), {}});
    }
  }
}

int RunShim(const std::string& dir, const std::string& log, const std::vector<char*>& runsc) {
  if (runsc.size() < 2 || runsc.back() != nullptr) {
    Say("usage: warren-gvisor-init shim --dir <dir> --log <file> -- <runsc command...>");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  signal(SIGHUP, SIG_IGN);
  if (chdir(dir.c_str()) != 0) {
    printf("fail chdir %s: %s\n", dir.c_str(), strerror(errno));
    return 1;
  }
  int own_log = open("shim.log", O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (own_log >= 0) {
    dup2(own_log, STDERR_FILENO);
    close(own_log);
  }
  // The socket is bound relative to the directory: its full path may exceed sun_path.
  base::UniqueFd listener(socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  strcpy(addr.sun_path, "mux.sock");
  unlink("mux.sock");
  if (!listener || bind(listener.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      chmod("mux.sock", 0600) != 0 || listen(listener.get(), 128) != 0) {
    printf("fail mux.sock: %s\n", strerror(errno));
    return 1;
  }
  int to_init[2], from_init[2];
  if (pipe2(to_init, O_CLOEXEC) != 0 || pipe2(from_init, O_CLOEXEC) != 0) {
    printf("fail pipe: %s\n", strerror(errno));
    return 1;
  }
  base::UniqueFd to_init_r(to_init[0]), to_init_w(to_init[1]);
  base::UniqueFd from_init_r(from_init[0]), from_init_w(from_init[1]);
  base::UniqueFd log_fd(open(log.empty() ? "/dev/null" : log.c_str(),
                             O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640));
  if (!log_fd) {
    printf("fail open %s: %s\n", log.c_str(), strerror(errno));
    return 1;
  }
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    printf("fail fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    dup2(to_init_r.get(), STDIN_FILENO);
    dup2(from_init_w.get(), STDOUT_FILENO);
    dup2(log_fd.get(), STDERR_FILENO);
    execv(runsc[0], runsc.data());
    _exit(127);
  }
  // Only the sandbox holds the container's ends now, so its exit is our EOF.
  to_init_r.reset();
  from_init_w.reset();
  log_fd.reset();
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    printf("fail %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
    return 1;
  }
  printf("ok\n");
  fflush(stdout);
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    dup2(null_fd, STDOUT_FILENO);
    dup2(null_fd, STDIN_FILENO);
    close(null_fd);
  }
  fcntl(from_init_r.get(), F_SETFL, O_NONBLOCK);
  fcntl(to_init_w.get(), F_SETFL, O_NONBLOCK);
  ShimRelay relay(from_init_r.get(), to_init_w.get(), listener.get(), "exit");
  relay.Run();
  Say("sandbox gone");
  unlink("mux.sock");
  return 0;
}

}  // namespace warren::runtime::gvisor::mux
