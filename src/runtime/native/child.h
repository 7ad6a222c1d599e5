#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "os/capabilities.h"
#include "os/overlay.h"
#include "os/rlimit.h"
#include "os/seccomp.h"

namespace warren::runtime::native {

// Everything the sandbox's first process needs, prepared by the parent before clone3 so that
// the child only makes system calls on ready data (it runs in a copy of a multi-threaded
// process: no allocation, no locks — see os/clone.h). The child only reads it.

// A bind mount, already cloned as a detached tree by the parent (os::CloneMountTree), so the
// source is resolved with the host's privileges and only the target is resolved in the child.
struct ChildBind {
  int tree_fd = -1;
  std::string target;
  bool is_dir = true;
};

// Monotonic timestamps (ns) of the launch phases, written by the parent and the child into a
// shared page when tracing is on (the bench prints them). Slots are fixed; 0 = not reached.
enum class LaunchPhase : int {
  kCallStart = 0,   // parent: LaunchSandboxProcess entered
  kCloned,          // parent: clone3 returned
  kChildEntered,    // child: first instruction of ChildMain
  kReleased,        // parent: id maps written, child released
  kChildReady,      // child: past the sync read, ids set
  kChildPlaced,     // child: in its cgroups (v1: moved itself), cgroup namespace made
  kNamespacesSet,   // child: hostname, loopback
  kOverlayMounted,  // child: root overlay attached
  kProcSysMounted,  // child: /proc (masked, read-only parts) and /sys
  kDevMounted,      // child: /dev
  kPivoted,         // child: binds done, pivot_root done
  kCredentialsSet,  // child: rlimits, capabilities, user
  kSeccompLoaded,   // child: about to execve
  kExecSeen,        // parent: EOF on the report pipe
  kCount
};
struct LaunchTrace {
  uint64_t ns[static_cast<int>(LaunchPhase::kCount)] = {};
};
uint64_t MonotonicNs() noexcept;

struct ChildPlan {
  std::string sandbox_id;
  // Read end of the sync pipe. The parent writes one byte once the id maps are written.
  int sync_fd = -1;
  int error_fd = -1;  // write end, O_CLOEXEC: a ChildFailure on error, EOF once exec succeeded
  // The parent's ends of both pipes: the child closes its copies at once, so that it sees EOF
  // on sync_fd if the parent gives up, and the parent sees EOF on the report pipe at exec.
  int parent_fds[2] = {-1, -1};
  int stdio[3] = {-1, -1, -1};

  bool user_namespace = false;
  // no_new_privs for pid 1 and all it starts. Off, setuid programs of the image work (`sudo`
  // for the image's user, as in Docker's default); the seccomp filter is then loaded while the
  // child still holds CAP_SYS_ADMIN in its own user namespace, which the kernel asks for
  // instead.
  bool no_new_privs = true;
  // v1: the sandbox group's `tasks` files (os::Cgroup::OpenTaskFiles), to which the child
  // writes itself before anything it does can be charged to the server's groups. The parent's
  // own move of a pid (cgroup.procs) would wait for an RCU grace period; this does not.
  // Empty on v2, where the child is born in its group (CLONE_INTO_CGROUP).
  std::vector<int> cgroup_task_fds;
  bool unshare_cgroup_ns = false;  // v1: new cgroup namespace once placed

  std::string hostname;
  os::OverlayLayers overlay;
  std::string rootfs_dir;  // host directory the overlay is attached to before pivot_root
  std::vector<ChildBind> binds;
  std::vector<os::Rlimit> rlimits;

  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<gid_t> groups;
  os::CapMask capabilities = 0;  // bounding set; also effective/permitted when uid == 0
  int last_cap = 40;
  const os::SeccompProgram* seccomp = nullptr;

  std::string working_dir;
  std::vector<std::string> exec_candidates;  // argv[0] resolved against PATH, in order
  std::vector<char*> argv;                   // null-terminated, pointing into the spec
  std::vector<char*> envp;                   // null-terminated
  LaunchTrace* trace = nullptr;              // shared with the parent, or null
};

// The step at which the child failed.
enum class ChildStep : int32_t {
  kStdio = 1,
  kSession,
  kWaitForParent,
  kCgroupPlacement,  // index into cgroup_task_fds
  kBecomeRoot,
  kCgroupNamespace,
  kHostname,
  kLoopback,
  kPrivateMounts,
  kOverlay,
  kProc,
  kMaskPath,      // index into kMaskedPaths
  kReadOnlyPath,  // index into kReadOnlyPaths
  kSys,
  kDev,
  kDevNode,  // index into kDevNodes
  kDevPts,
  kDevShm,
  kBindMount,  // index into ChildPlan::binds
  kPivotRoot,
  kRlimit,  // index into ChildPlan::rlimits
  kBoundingSet,
  kGroups,
  kGid,
  kUid,
  kCapabilities,
  kWorkingDir,
  kNoNewPrivs,
  kCloseFds,
  kSeccomp,
  kExec,  // index into exec_candidates of the most telling failure
};

// What the child writes to error_fd before it exits.
struct ChildFailure {
  int32_t step = 0;
  int32_t err = 0;  // errno
  int32_t index = 0;
};

// The paths runc masks and makes read-only (relative to /proc or /sys).
extern const char* const kMaskedProcPaths[];
extern const char* const kMaskedSysPaths[];
extern const char* const kReadOnlyProcPaths[];
extern const char* const kDevNodes[];

// The child's entry point for os::Clone: arg is a const ChildPlan*. Never returns on success
// (execve); on failure reports a ChildFailure and exits 127.
int ChildMain(void* arg) noexcept;

// Turns a child's report into a Status a controller can act on, naming the thing that failed.
Status ChildFailureToStatus(const ChildFailure& failure, const ChildPlan& plan);

}  // namespace warren::runtime::native
