#include "os/spawn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/close_range.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/strings.h"

namespace warren::os {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// What the child reports through the error pipe when a step fails before exec.
struct ChildError {
  int step;
  int err;
};
enum Step {
  kStepSetsid,
  kStepCtty,
  kStepDup,
  kStepGroups,
  kStepGid,
  kStepUid,
  kStepCwd,
  kStepExec
};
const char* StepName(int step) {
  switch (step) {
    case kStepSetsid:
      return "setsid";
    case kStepCtty:
      return "set controlling terminal";
    case kStepDup:
      return "set up stdio";
    case kStepGroups:
      return "setgroups";
    case kStepGid:
      return "setgid";
    case kStepUid:
      return "setuid";
    case kStepCwd:
      return "chdir";
    default:
      return "exec";
  }
}

Status MakePipe(base::UniqueFd& r, base::UniqueFd& w) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return ErrnoError("pipe2", errno);
  r.reset(fds[0]);
  w.reset(fds[1]);
  return Status::Ok();
}

[[noreturn]] void ChildFail(int fd, int step) {
  ChildError e{step, errno};
  ssize_t ignored = write(fd, &e, sizeof e);
  (void)ignored;
  _exit(127);
}

}  // namespace

Result<std::string> ResolveProgram(const std::string& program,
                                   const std::vector<std::string>& env) {
  if (program.empty()) return InvalidArgumentError("empty program name");
  if (program.find('/') != std::string::npos) return program;
  std::string path = kDefaultPath;
  for (const auto& kv : env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  for (auto dir : base::Split(path, ':')) {
    std::string candidate = fmt::format("{}/{}", dir.empty() ? "." : dir, program);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return NotFoundError(fmt::format("executable '{}' not found in PATH", program));
}

Result<SpawnedChild> Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return InvalidArgumentError("no program to run");
  for (const auto& a : options.argv) {
    if (a.find('\0') != std::string::npos) return InvalidArgumentError("argument contains NUL");
  }
  ASSIGN_OR_RETURN(std::string program, ResolveProgram(options.argv[0], options.env));

  // Everything the child touches is built now: after fork only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const bool pty = options.pty_slave >= 0;

  SpawnedChild child;
  base::UniqueFd in_r, out_w, err_w, err_pipe_r, err_pipe_w;
  if (!pty) {
    if (options.stdin_pipe) {
      RETURN_IF_ERROR(MakePipe(in_r, child.stdin_w));
    } else {
      in_r.reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
      if (!in_r) return ErrnoError("open /dev/null", errno);
    }
    RETURN_IF_ERROR(MakePipe(child.stdout_r, out_w));
    RETURN_IF_ERROR(MakePipe(child.stderr_r, err_w));
  }
  RETURN_IF_ERROR(MakePipe(err_pipe_r, err_pipe_w));
  const int fd0 = pty ? options.pty_slave : in_r.get();
  const int fd1 = pty ? options.pty_slave : out_w.get();
  const int fd2 = pty ? options.pty_slave : err_w.get();
  const int report = err_pipe_w.get();
  const Credentials* creds = options.credentials ? &*options.credentials : nullptr;
  const char* cwd = options.cwd.empty() ? nullptr : options.cwd.c_str();

  pid_t pid = fork();
  if (pid < 0) return ErrnoError("fork", errno);
  if (pid == 0) {
    // The child. Signal dispositions and the mask come from the agent; give the program the
    // defaults a shell expects.
    sigset_t all;
    sigemptyset(&all);
    for (int s = 1; s < NSIG; ++s) {
      if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
    }
    sigprocmask(SIG_SETMASK, &all, nullptr);
    if (options.new_session && setsid() < 0) ChildFail(report, kStepSetsid);
    if (pty && ioctl(fd0, TIOCSCTTY, 0) != 0) ChildFail(report, kStepCtty);
    // dup2 clears close-on-exec on the targets.
    if (dup2(fd0, 0) < 0 || dup2(fd1, 1) < 0 || dup2(fd2, 2) < 0) ChildFail(report, kStepDup);
    if (creds) {
      if (setgroups(creds->groups.size(), creds->groups.data()) != 0)
        ChildFail(report, kStepGroups);
      if (setgid(creds->gid) != 0) ChildFail(report, kStepGid);
      if (setuid(creds->uid) != 0) ChildFail(report, kStepUid);
    }
    if (cwd && chdir(cwd) != 0) ChildFail(report, kStepCwd);
    // Whatever the agent had open (sockets, other processes' pipes) must not leak into the
    // child: mark everything above stdio close-on-exec (the report pipe closes on exec too).
    syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
    execve(program.c_str(), argv.data(), envp.data());
    ChildFail(report, kStepExec);
  }

  err_pipe_w.reset();
  ChildError e{};
  ssize_t n;
  do {
    n = read(err_pipe_r.get(), &e, sizeof e);
  } while (n < 0 && errno == EINTR);
  if (n == sizeof e) {
    // The child has exited (or is about to) with 127; the caller's reaper collects it.
    return ErrnoError(fmt::format("{} '{}'", StepName(e.step),
                                  e.step == kStepCwd ? options.cwd : options.argv[0]),
                      e.err);
  }
  child.pid = pid;
  return child;
}

}  // namespace warren::os
