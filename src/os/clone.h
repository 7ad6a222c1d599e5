#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <memory>

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
  // The child borrows the caller's memory (CLONE_VM) on a stack of its own until it execs or
  // exits, instead of a copy of it. A copy costs in proportion to the caller's memory: clone
  // copies every page table, and afterwards every thread of the caller takes a copy-on-write
  // fault, with a TLB shootdown to the other CPUs, on each page it writes. With CLONE_VM the
  // child must also not write anything the caller reads (its stack aside), and it shares the
  // calling thread's thread-local storage (errno): the caller must not rely on errno from the
  // moment Clone returns until the child has exec'd or exited. Not with cgroup_fd (glibc's
  // clone(), which runs the child on its stack, has no CLONE_INTO_CGROUP), and ignored in
  // sanitizer builds (their runtime keeps per-thread state the child would share).
  bool share_memory = false;
};

// The stack of a child made with share_memory (and what it starts with), unmapped when
// destroyed: keep it until the child has exec'd or has been reaped.
class ChildStack {
 public:
  // Use Map.
  ChildStack(void* base, size_t bytes) : base_(base), bytes_(bytes) {}
  static Result<std::unique_ptr<ChildStack>> Map(size_t bytes);
  ~ChildStack();
  ChildStack(const ChildStack&) = delete;
  ChildStack& operator=(const ChildStack&) = delete;
  void* top() const;

  // Read by the child as it starts, so they live as long as its stack.
  ChildFn fn = nullptr;
  void* arg = nullptr;

 private:
  void* base_;
  size_t bytes_;
};

// A process made by Clone: its pid in the caller's pid namespace and a pidfd that refers to it
// for its whole life (the pid may be recycled, the pidfd never is).
struct ClonedProcess {
  pid_t pid = -1;
  base::UniqueFd pidfd;
  std::unique_ptr<ChildStack> stack;  // share_memory only
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
