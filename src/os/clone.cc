#include "os/clone.h"

#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace warren::os {

Result<ClonedProcess> Clone(const CloneRequest& request, ChildFn fn, void* arg) {
  int pidfd = -1;
  struct clone_args args;
  memset(&args, 0, sizeof args);
  args.flags = request.namespaces | CLONE_PIDFD;
  args.pidfd = reinterpret_cast<uint64_t>(&pidfd);
  args.exit_signal = SIGCHLD;
  if (request.cgroup_fd >= 0) {
    args.flags |= CLONE_INTO_CGROUP;
    args.cgroup = static_cast<uint64_t>(request.cgroup_fd);
  }

  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  long rc = syscall(SYS_clone3, &args, sizeof args);
  if (rc == 0) {
    // Child: a copy of this thread only. Never return into the parent's code.
    _exit(fn(arg));
  }
  int err = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (rc < 0) {
    if (err == EAGAIN || err == ENOSPC) {
      return ResourceExhaustedError(std::string("clone3: ") + strerror(err));
    }
    return ErrnoError("clone3", err);
  }
  ClonedProcess out;
  out.pid = static_cast<pid_t>(rc);
  out.pidfd = base::UniqueFd(pidfd);
  return out;
}

void ResetSignalsForExec() noexcept {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // EINVAL for glibc-reserved signals is fine.
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
}

}  // namespace warren::os
