#pragma once

#include <sys/types.h>

#include <cstdint>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// The function a cloned child runs. It executes in a copy of a possibly multi-threaded
// process, so it must be async-signal-safe: no allocation, no locks, no logging, no
// exceptions — only system calls on data prepared by the parent. Beware of libc wrappers
// that coordinate threads: setuid/setgid/setgroups and friends wait for the parent's threads
// in the child and can hang forever; use syscall(SYS_setresuid, ...). Its return value is the
// child's exit status.
using ChildFn = int (*)(void* arg) noexcept;

struct CloneRequest {
  // CLONE_NEW* flags. CLONE_PIDFD is always added.
  uint64_t namespaces = 0;
  // A cgroup v2 directory fd: the child starts in it (CLONE_INTO_CGROUP). -1 for none.
  int cgroup_fd = -1;
};

// A process made by Clone: its pid in the caller's pid namespace and a pidfd that refers to it
// for its whole life (the pid may be recycled, the pidfd never is).
struct ClonedProcess {
  pid_t pid = -1;
  base::UniqueFd pidfd;
};

// clone3(2) with fork semantics (no new stack, exit signal SIGCHLD): the child runs
// fn(arg) and _exits with its result. All signals are blocked in the calling thread for the
// duration, so no handler of the parent runs in the child; the child starts with every signal
// blocked and `fn` must reset handlers and the mask before exec (see ResetSignalsForExec).
// Errors: ENOSPC/EAGAIN (pid limits) → ResourceExhausted, EPERM → PermissionDenied, ...
Result<ClonedProcess> Clone(const CloneRequest& request, ChildFn fn, void* arg);

// For a child before execve: every signal back to SIG_DFL (ignored signals survive exec
// otherwise) and an empty signal mask. Async-signal-safe.
void ResetSignalsForExec() noexcept;

}  // namespace warren::os
