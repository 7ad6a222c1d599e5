#include "os/spawn.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/close_range.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "base/strings.h"
#include "os/thread_priority.h"

namespace warren::os {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

// The step a child failed at, reported back before it exits 127.
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

// Everything the child reads, built by the parent. The child shares the parent's memory until
// it execs or exits (CLONE_VM|CLONE_VFORK), so it reads this in place and writes back only the
// step that failed.
struct ChildArgs {
  const char* program;
  char* const* argv;
  char* const* envp;
  int fd0, fd1, fd2;
  bool pty;
  bool new_session;
  const Credentials* creds;
  const char* cwd;
  int failed_step = -1;
  int err = 0;
};

// The child runs on a stack the parent allocated and sanitizers do not know of; it must not
// poison shadow memory the parent shares.
#define WARREN_CHILD_CODE __attribute__((no_sanitize("address", "undefined")))

[[noreturn]] WARREN_CHILD_CODE void ChildFail(ChildArgs* a, int step) {
  a->err = errno;
  a->failed_step = step;
  _exit(127);
}

WARREN_CHILD_CODE int ChildMain(void* p) {
  auto* a = static_cast<ChildArgs*>(p);
  // Signal dispositions come from the agent and its handlers must not run here, on memory the
  // parent shares: give the program the defaults a shell expects, then unblock (the parent
  // blocked everything around clone).
  for (int s = 1; s < NSIG; ++s) {
    if (s != SIGKILL && s != SIGSTOP) signal(s, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  if (a->new_session && setsid() < 0) ChildFail(a, kStepSetsid);
  if (a->pty && ioctl(a->fd0, TIOCSCTTY, 0) != 0) ChildFail(a, kStepCtty);
  // dup2 clears close-on-exec on the targets.
  if (dup2(a->fd0, 0) < 0 || dup2(a->fd1, 1) < 0 || dup2(a->fd2, 2) < 0) {
    ChildFail(a, kStepDup);
  }
  if (a->creds) {
    // Raw system calls: glibc's setuid and friends walk the process's thread list to change
    // every thread, and the list this child sees is the parent's.
    if (syscall(SYS_setgroups, a->creds->groups.size(), a->creds->groups.data()) != 0) {
      ChildFail(a, kStepGroups);
    }
    if (syscall(SYS_setgid, a->creds->gid) != 0) ChildFail(a, kStepGid);
    if (syscall(SYS_setuid, a->creds->uid) != 0) ChildFail(a, kStepUid);
  }
  if (a->cwd && chdir(a->cwd) != 0) ChildFail(a, kStepCwd);
  // Whatever the agent had open (sockets, other processes' pipes) must not leak into the
  // child: mark everything above stdio close-on-exec.
  syscall(SYS_close_range, 3u, ~0u, CLOSE_RANGE_CLOEXEC);
  execve(a->program, a->argv, a->envp);
  ChildFail(a, kStepExec);
}

// Enough for ChildMain and the libc calls it makes; it runs no program code of ours.
constexpr size_t kChildStackBytes = 64 * 1024;

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

  // Everything the child touches is built now: it may make only async-signal-safe calls.
  std::vector<char*> argv;
  for (const auto& a : options.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (const auto& e : options.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  const bool pty = options.pty_slave >= 0;

  SpawnedChild child;
  base::UniqueFd in_r, out_w, err_w;
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
  ChildArgs args{
      .program = program.c_str(),
      .argv = argv.data(),
      .envp = envp.data(),
      .fd0 = pty ? options.pty_slave : in_r.get(),
      .fd1 = pty ? options.pty_slave : out_w.get(),
      .fd2 = pty ? options.pty_slave : err_w.get(),
      .pty = pty,
      .new_session = options.new_session,
      .creds = options.credentials ? &*options.credentials : nullptr,
      .cwd = options.cwd.empty() ? nullptr : options.cwd.c_str(),
  };

  // As posix_spawn does: the child borrows our memory until it execs, so starting it costs the
  // same however much memory and how many threads the agent has (fork copied every mapping
  // and page table: ~12 ms with 200 MiB touched and 128 threads, against ~0.6 ms).
  auto stack = std::make_unique_for_overwrite<char[]>(kChildStackBytes);
  auto top = reinterpret_cast<uintptr_t>(stack.get() + kChildStackBytes) & ~uintptr_t{15};
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid =
      clone(ChildMain, reinterpret_cast<void*>(top), CLONE_VM | CLONE_VFORK | SIGCHLD, &args);
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  if (pid < 0) return ErrnoError("clone", clone_errno);
  if (args.failed_step >= 0) {
    // The child has exited with 127; the caller's reaper collects it.
    return ErrnoError(fmt::format("{} '{}'", StepName(args.failed_step),
                                  args.failed_step == kStepCwd ? options.cwd : options.argv[0]),
                      args.err);
  }
  child.pid = pid;
  GiveChildNiceOutsideGuard(pid);
  return child;
}

}  // namespace warren::os
