#include "os/run_tool.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "os/spawn.h"

namespace warren::os {
namespace {

constexpr size_t kMaxToolOutput = 4096;

}  // namespace

Status RunTool(const std::vector<std::string>& argv) {
  SpawnOptions spawn;
  spawn.argv = argv;
  spawn.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  spawn.stdin_pipe = false;
  ASSIGN_OR_RETURN(SpawnedChild child, Spawn(spawn));
  // Both pipes are drained to the end (a closed one would kill the tool with SIGPIPE); what
  // it says on either, up to a few KiB, names what went wrong.
  std::string err;
  pollfd fds[2] = {{child.stdout_r.get(), POLLIN, 0}, {child.stderr_r.get(), POLLIN, 0}};
  int open_fds = 2;
  char buf[1024];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (pollfd& p : fds) {
      if (p.fd < 0 || p.revents == 0) continue;
      ssize_t n = read(p.fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        p.fd = -1;
        --open_fds;
      } else if (err.size() < kMaxToolOutput) {
        err.append(buf, static_cast<size_t>(n));
      }
    }
  }
  int status = 0;
  while (waitpid(child.pid, &status, 0) < 0) {
    if (errno != EINTR) return ErrnoError(fmt::format("wait for {}", argv[0]), errno);
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
  return InternalError(fmt::format("{} failed ({}): {}", argv[0],
                                   WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                                     : fmt::format("signal {}", WTERMSIG(status)),
                                   err));
}

}  // namespace warren::os
