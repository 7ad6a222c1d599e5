#pragma once

#include <chrono>
#include <functional>

#include "base/result.h"
#include "os/cgroup.h"
#include "os/namespace.h"
#include "os/pidfd.h"
#include "runtime/native/child.h"

namespace warren::runtime::native {

struct LaunchOptions {
  bool user_namespace = false;
  os::IdMapping uids;
  os::IdMapping gids;
  os::Cgroup* cgroup = nullptr;              // borrowed; the child is placed in it before it runs
  std::chrono::milliseconds timeout{30000};  // for the child to exec
  // Runs once the child's namespaces exist and before it is released (so before anything of
  // the sandbox runs): the network is plumbed here. A failure kills the child.
  std::function<Status(pid_t pid)> before_release;
};

// Clones the sandbox's first process into new mount, pid, uts, ipc, net (and user) namespaces,
// writes its id maps, places it in the cgroup (v2: CLONE_INTO_CGROUP; v1: cgroup.procs of
// every hierarchy while it waits), releases it, and waits until it has exec'd. `plan`'s
// sync/error fds are set here. On failure the child is killed and reaped, and the error names
// what went wrong (ChildFailureToStatus). The returned pidfd refers to pid 1 of the sandbox.
Result<os::Pidfd> LaunchSandboxProcess(ChildPlan& plan, const LaunchOptions& options);

}  // namespace warren::runtime::native
