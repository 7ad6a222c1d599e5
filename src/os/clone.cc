#include "os/clone.h"

#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/thread_priority.h"

namespace warren::os {
namespace {

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// Runs the sandbox's first process's setup: a few KiB of frames at most.
constexpr size_t kSharedChildStackBytes = 256 * 1024;

int RunChild(void* p) {
  auto* stack = static_cast<ChildStack*>(p);
  return stack->fn(stack->arg);  // glibc's clone exits the child with this
}

// Every signal blocked in the calling thread while it lives, so no handler of ours runs in a
// child; the child starts with that mask.
class AllSignalsBlocked {
 public:
  AllSignalsBlocked() {
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved_);
  }
  ~AllSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &saved_, nullptr); }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;

 private:
  sigset_t saved_;
};

// The caller's side of a clone that returned `rc` with `err` (errno).
Result<ClonedProcess> Cloned(const char* call, long rc, int err, int pidfd) {
  if (rc < 0) {
    if (err == EAGAIN || err == ENOSPC) {
      return ResourceExhaustedError(std::string(call) + ": " + strerror(err));
    }
    return ErrnoError(call, err);
  }
  ClonedProcess out;
  out.pid = static_cast<pid_t>(rc);
  out.pidfd = base::UniqueFd(pidfd);
  GiveChildNiceOutsideGuard(out.pid);
  return out;
}

Result<ClonedProcess> CloneSharingMemory(const CloneRequest& request, ChildFn fn, void* arg) {
  ASSIGN_OR_RETURN(auto stack, ChildStack::Map(kSharedChildStackBytes));
  stack->fn = fn;
  stack->arg = arg;
  int pidfd = -1;
  int flags = static_cast<int>(request.namespaces) | CLONE_VM | CLONE_PIDFD | SIGCHLD;
  long rc;
  int err;
  {
    AllSignalsBlocked blocked;
    rc = clone(RunChild, stack->top(), flags, stack.get(), &pidfd);
    err = errno;
  }
  ASSIGN_OR_RETURN(ClonedProcess out, Cloned("clone", rc, err, pidfd));
  out.stack = std::move(stack);
  return out;
}

}  // namespace

Result<std::unique_ptr<ChildStack>> ChildStack::Map(size_t bytes) {
  long page = sysconf(_SC_PAGESIZE);
  size_t total = bytes + static_cast<size_t>(page);  // a guard page below the stack
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
  if (base == MAP_FAILED) return ErrnoError("mmap child stack", errno);
  if (mprotect(base, static_cast<size_t>(page), PROT_NONE) != 0) {
    int err = errno;
    munmap(base, total);
    return ErrnoError("mprotect child stack guard", err);
  }
  return std::make_unique<ChildStack>(base, total);
}

ChildStack::~ChildStack() { munmap(base_, bytes_); }

void* ChildStack::top() const {
  auto end = reinterpret_cast<uintptr_t>(base_) + bytes_;
  return reinterpret_cast<void*>(end & ~uintptr_t{15});
}

Result<ClonedProcess> Clone(const CloneRequest& request, ChildFn fn, void* arg) {
  if (request.share_memory && request.cgroup_fd < 0 && !kSanitized) {
    return CloneSharingMemory(request, fn, arg);
  }
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

  long rc;
  int err;
  {
    AllSignalsBlocked blocked;
    rc = syscall(SYS_clone3, &args, sizeof args);
    if (rc == 0) {
      // Child: a copy of this thread only. Never return into the parent's code.
      _exit(fn(arg));
    }
    err = errno;
  }
  return Cloned("clone3", rc, err, pidfd);
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
