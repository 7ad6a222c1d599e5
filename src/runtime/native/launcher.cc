#include "runtime/native/launcher.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "base/scope_guard.h"
#include "base/small_file.h"
#include "base/unique_fd.h"
#include "os/clone.h"

namespace warren::runtime::native {
namespace {

// Where a process is stuck: its state and kernel wait channel, for error messages.
std::string Whereabouts(pid_t pid) {
  auto stat = base::ReadSmallFile(fmt::format("/proc/{}/stat", pid));
  auto wchan = base::ReadSmallFile(fmt::format("/proc/{}/wchan", pid));
  std::string state = "?";
  if (stat.ok()) {
    size_t close = stat->rfind(')');
    if (close != std::string::npos && close + 2 < stat->size()) state = stat->substr(close + 2, 1);
  }
  return fmt::format("state {}, wchan {}", state, wchan.ok() ? *wchan : "?");
}

// Reads the child's report: nullopt on EOF (it exec'd), the failure otherwise.
Result<std::optional<ChildFailure>> ReadReport(int fd, std::chrono::milliseconds timeout,
                                               const std::string& id, pid_t pid) {
  pollfd p = {fd, POLLIN, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return DeadlineExceededError(fmt::format("sandbox {}: pid 1 did not exec within {} ms ({})", id,
                                             timeout.count(), Whereabouts(pid)));
  }
  ChildFailure f;
  ssize_t got;
  do {
    got = read(fd, &f, sizeof f);
  } while (got < 0 && errno == EINTR);
  if (got == 0) return std::optional<ChildFailure>();
  if (got != static_cast<ssize_t>(sizeof f)) {
    return InternalError(fmt::format("sandbox {}: truncated report from pid 1", id));
  }
  return std::optional<ChildFailure>(f);
}

}  // namespace

Result<os::Pidfd> LaunchSandboxProcess(ChildPlan& plan, const LaunchOptions& options) {
  auto mark = [&](LaunchPhase phase) {
    if (plan.trace != nullptr) plan.trace->ns[static_cast<int>(phase)] = MonotonicNs();
  };
  mark(LaunchPhase::kCallStart);
  int sync[2], report[2];
  if (pipe2(sync, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  base::UniqueFd sync_read(sync[0]), sync_write(sync[1]);
  if (pipe2(report, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  base::UniqueFd report_read(report[0]), report_write(report[1]);
  plan.sync_fd = sync_read.get();
  plan.error_fd = report_write.get();
  plan.parent_fds[0] = sync_write.get();
  plan.parent_fds[1] = report_read.get();

  os::CloneRequest req;
  req.namespaces = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWNET;
  // The child only reads the plan and makes system calls (child.h), so it can borrow our
  // memory until it execs: a copy of the server costs in proportion to its size, for every
  // sandbox (page tables copied, then a copy-on-write fault and TLB shootdown for each page
  // any thread writes). From here until the exec is seen, this thread does not rely on errno
  // (the child shares it): failures below read it only right after their own call.
  req.share_memory = true;
  if (options.user_namespace) req.namespaces |= CLONE_NEWUSER;
  base::UniqueFd cgroup_dir;
  std::vector<base::UniqueFd> task_files;  // the child's copies outlive ours
  plan.cgroup_task_fds.clear();
  bool v2 = options.cgroup != nullptr && options.cgroup->version() == os::CgroupVersion::kV2;
  if (v2) {
    ASSIGN_OR_RETURN(cgroup_dir, options.cgroup->OpenUnifiedDir());
    req.cgroup_fd = cgroup_dir.get();
    // Born in its cgroup, so the cgroup namespace can be made at clone time.
    req.namespaces |= CLONE_NEWCGROUP;
    plan.unshare_cgroup_ns = false;
  } else {
    if (options.cgroup != nullptr) {
      auto files = options.cgroup->OpenTaskFiles();
      if (!files.ok()) return files.status().WithPrefix(fmt::format("sandbox {}", plan.sandbox_id));
      task_files = std::move(*files);
      for (const base::UniqueFd& fd : task_files) plan.cgroup_task_fds.push_back(fd.get());
    }
    plan.unshare_cgroup_ns = true;
  }

  ASSIGN_OR_RETURN(os::ClonedProcess child, os::Clone(req, ChildMain, &plan));
  os::Pidfd process(child.pid, std::move(child.pidfd));
  mark(LaunchPhase::kCloned);
  sync_read.reset();
  report_write.reset();
  task_files.clear();
  auto kill_child = base::ScopeExit([&] {
    process.SendSignal(SIGKILL).IgnoreError();
    Status gone = process.WaitForExit(std::chrono::seconds(5));
    process.TryReap().status().IgnoreError();
    // A child that may still run on a stack in our memory keeps it: unmapping it could hand
    // the range to an allocation the child then writes.
    if (!gone.ok() && child.stack) (void)child.stack.release();
  });

  if (options.user_namespace) {
    Status st = os::WriteIdMappings(child.pid, options.uids, options.gids);
    if (!st.ok()) return st.WithPrefix(fmt::format("sandbox {}: user namespace", plan.sandbox_id));
  }
  if (options.before_release) RETURN_IF_ERROR(options.before_release(child.pid));
  // The child places itself in its cgroups (v1) and goes on to exec.
  char go = 1;
  if (write(sync_write.get(), &go, 1) != 1) {
    return ErrnoError(fmt::format("sandbox {}: release pid 1", plan.sandbox_id), errno);
  }
  mark(LaunchPhase::kReleased);
  sync_write.reset();

  ASSIGN_OR_RETURN(auto failure,
                   ReadReport(report_read.get(), options.timeout, plan.sandbox_id, child.pid));
  if (failure) return ChildFailureToStatus(*failure, plan);
  mark(LaunchPhase::kExecSeen);
  kill_child.Dismiss();
  return process;
}

}  // namespace warren::runtime::native
