#include "runtime/native/child.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <grp.h>
#include <linux/close_range.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "os/cgroup.h"
#include "os/clone.h"
#include "os/mount.h"
#include "os/netns.h"

namespace warren::runtime::native {

const char* const kMaskedProcPaths[] = {"acpi",          "asound",     "kcore",       "keys",
                                        "latency_stats", "timer_list", "timer_stats", "sched_debug",
                                        "scsi",          nullptr};
const char* const kMaskedSysPaths[] = {"firmware", "devices/virtual/powercap", nullptr};
const char* const kReadOnlyProcPaths[] = {"bus", "fs", "irq", "sys", "sysrq-trigger", nullptr};
const char* const kDevNodes[] = {"null", "zero", "full", "random", "urandom", "tty", nullptr};

uint64_t MonotonicNs() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

namespace {

// glibc's setresuid/setresgid/setgroups are "setxid" wrappers: in a multi-threaded process they
// lock glibc's thread list and signal every thread so all change credentials together. In a
// cloned child that list describes the parent's threads, and the wrapper can wait for them
// forever (seen as a child stuck in futex_wait). The child is single-threaded: plain system
// calls are both correct and safe.
int RawSetresuid(uid_t id) noexcept { return static_cast<int>(syscall(SYS_setresuid, id, id, id)); }
int RawSetresgid(gid_t id) noexcept { return static_cast<int>(syscall(SYS_setresgid, id, id, id)); }
int RawSetgroups(size_t n, const gid_t* groups) noexcept {
  return static_cast<int>(syscall(SYS_setgroups, n, groups));
}

void Mark(const ChildPlan& plan, LaunchPhase phase) {
  if (plan.trace != nullptr) plan.trace->ns[static_cast<int>(phase)] = MonotonicNs();
}

[[noreturn]] void Fail(const ChildPlan& plan, ChildStep step, int err, int index = 0) {
  ChildFailure f;
  f.step = static_cast<int32_t>(step);
  f.err = err < 0 ? -err : err;
  f.index = index;
  ssize_t n;
  do {
    n = write(plan.error_fd, &f, sizeof f);
  } while (n < 0 && errno == EINTR);
  _exit(127);
}

// rc < 0 is -errno.
void Check(const ChildPlan& plan, int rc, ChildStep step, int index = 0) {
  if (rc < 0) Fail(plan, step, rc, index);
}

void CheckErrno(const ChildPlan& plan, int rc, ChildStep step, int index = 0) {
  if (rc < 0) Fail(plan, step, errno, index);
}

// Covers `fd` (a file or directory) so nothing below it can be read: a read-only empty tmpfs
// over directories, /dev/null over files.
int MaskRaw(int fd) {
  struct stat st;
  if (fstat(fd, &st) != 0) return -errno;
  if (S_ISDIR(st.st_mode)) {
    static const char* const kOptions[] = {"size", "0", "mode", "0555", nullptr};
    int m = os::MountFilesystemRaw("tmpfs", kOptions, MOUNT_ATTR_RDONLY, fd);
    if (m < 0) return m;
    close(m);
    return 0;
  }
  int tree = os::CloneTreeRaw(AT_FDCWD, "/dev/null", false, false);
  if (tree < 0) return tree;
  int rc = os::MoveMountRaw(tree, fd);
  close(tree);
  return rc;
}

void MaskPaths(const ChildPlan& plan, int base_fd, const char* const* paths, int index_base) {
  for (int i = 0; paths[i] != nullptr; ++i) {
    int fd = os::OpenInRootRaw(base_fd, paths[i], O_PATH | O_NOFOLLOW);
    if (fd == -ENOENT) continue;  // not on this kernel
    Check(plan, fd, ChildStep::kMaskPath, index_base + i);
    Check(plan, MaskRaw(fd), ChildStep::kMaskPath, index_base + i);
    close(fd);
  }
}

void MountProc(const ChildPlan& plan, int root_fd) {
  int target = os::MakePathInRootRaw(root_fd, "proc", true);
  Check(plan, target, ChildStep::kProc);
  int proc = os::MountFilesystemRaw(
      "proc", nullptr, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, target);
  Check(plan, proc, ChildStep::kProc);
  close(target);
  MaskPaths(plan, proc, kMaskedProcPaths, 0);
  for (int i = 0; kReadOnlyProcPaths[i] != nullptr; ++i) {
    int fd = os::OpenInRootRaw(proc, kReadOnlyProcPaths[i], O_PATH | O_NOFOLLOW);
    if (fd == -ENOENT) continue;
    Check(plan, fd, ChildStep::kReadOnlyPath, i);
    Check(plan, os::RemountReadOnlyRaw(fd), ChildStep::kReadOnlyPath, i);
    close(fd);
  }
  close(proc);
}

void MountSys(const ChildPlan& plan, int root_fd) {
  int target = os::MakePathInRootRaw(root_fd, "sys", true);
  Check(plan, target, ChildStep::kSys);
  int sys = os::MountFilesystemRaw(
      "sysfs", nullptr,
      MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, target);
  Check(plan, sys, ChildStep::kSys);
  close(target);
  // Indices of masked /sys paths follow the /proc ones in ChildStep::kMaskPath reports.
  int proc_count = 0;
  while (kMaskedProcPaths[proc_count] != nullptr) ++proc_count;
  MaskPaths(plan, sys, kMaskedSysPaths, proc_count);
  close(sys);
}

void MountDev(const ChildPlan& plan, int root_fd) {
  int target = os::MakePathInRootRaw(root_fd, "dev", true);
  Check(plan, target, ChildStep::kDev);
  static const char* const kDevOptions[] = {"mode", "0755", "size", "65536k", nullptr};
  // nodev: the allowed nodes below are bind mounts of the host's (mounts of their own); a node
  // made on this tmpfs itself would not open.
  int dev = os::MountFilesystemRaw(
      "tmpfs", kDevOptions, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, target);
  Check(plan, dev, ChildStep::kDev);
  close(target);

  // Device nodes are bind mounts of the host's: mknod is impossible in a user namespace, and
  // this way both modes share one path.
  char host_path[32];
  for (int i = 0; kDevNodes[i] != nullptr; ++i) {
    int f = openat(dev, kDevNodes[i], O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0666);
    CheckErrno(plan, f, ChildStep::kDevNode, i);
    close(f);
    int node = openat(dev, kDevNodes[i], O_PATH | O_NOFOLLOW | O_CLOEXEC);
    CheckErrno(plan, node, ChildStep::kDevNode, i);
    size_t len = strlen(kDevNodes[i]);
    memcpy(host_path, "/dev/", 5);
    memcpy(host_path + 5, kDevNodes[i], len + 1);
    int tree = os::CloneTreeRaw(AT_FDCWD, host_path, false, false);
    Check(plan, tree, ChildStep::kDevNode, i);
    Check(plan, os::MoveMountRaw(tree, node), ChildStep::kDevNode, i);
    close(tree);
    close(node);
  }

  CheckErrno(plan, mkdirat(dev, "pts", 0755), ChildStep::kDevPts);
  int pts_dir = openat(dev, "pts", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  CheckErrno(plan, pts_dir, ChildStep::kDevPts);
  static const char* const kPtsOptions[] = {"newinstance", nullptr, "ptmxmode", "0666", "mode",
                                            "0620",        "gid",   "5",        nullptr};
  int pts =
      os::MountFilesystemRaw("devpts", kPtsOptions, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, pts_dir);
  Check(plan, pts, ChildStep::kDevPts);
  close(pts);
  close(pts_dir);
  CheckErrno(plan, symlinkat("pts/ptmx", dev, "ptmx"), ChildStep::kDevPts);

  CheckErrno(plan, mkdirat(dev, "shm", 01777), ChildStep::kDevShm);
  int shm_dir = openat(dev, "shm", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  CheckErrno(plan, shm_dir, ChildStep::kDevShm);
  static const char* const kShmOptions[] = {"mode", "1777", "size", "65536k", nullptr};
  int shm = os::MountFilesystemRaw(
      "tmpfs", kShmOptions, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, shm_dir);
  Check(plan, shm, ChildStep::kDevShm);
  close(shm);
  close(shm_dir);

  // Conveniences every container runtime provides; failures here are harmless.
  symlinkat("/proc/self/fd", dev, "fd");
  symlinkat("/proc/self/fd/0", dev, "stdin");
  symlinkat("/proc/self/fd/1", dev, "stdout");
  symlinkat("/proc/self/fd/2", dev, "stderr");
  close(dev);
}

// One byte from the parent; EOF (it gave up on us) ends the child quietly.
void WaitForParent(const ChildPlan& plan) {
  char go = 0;
  ssize_t n;
  do {
    n = read(plan.sync_fd, &go, 1);
  } while (n < 0 && errno == EINTR);
  if (n != 1) _exit(126);
}

void SetUpStdio(const ChildPlan& plan) {
  // Move the three fds out of 0..2 first, so that dup2 onto 0..2 cannot clobber one of them.
  int high[3];
  for (int i = 0; i < 3; ++i) {
    high[i] = fcntl(plan.stdio[i], F_DUPFD_CLOEXEC, 10);
    CheckErrno(plan, high[i], ChildStep::kStdio, i);
  }
  for (int i = 0; i < 3; ++i) {
    CheckErrno(plan, dup2(high[i], i), ChildStep::kStdio, i);
    close(high[i]);
  }
}

}  // namespace

int ChildMain(void* arg) noexcept {
  const ChildPlan& plan = *static_cast<const ChildPlan*>(arg);
  Mark(plan, LaunchPhase::kChildEntered);
  close(plan.parent_fds[0]);
  close(plan.parent_fds[1]);
  SetUpStdio(plan);
  // A session of its own, with no controlling terminal: the server's (a terminal it was
  // started from) would otherwise be the sandbox's /dev/tty, open to reads, writes and
  // TIOCSTI. The child is never a group leader (its pgid is the parent's), so this succeeds.
  CheckErrno(plan, setsid(), ChildStep::kSession);
  os::ResetSignalsForExec();

  // The parent writes our uid/gid maps, then releases us. EOF means it gave up on us.
  WaitForParent(plan);

  if (plan.user_namespace) {
    // Become the namespace's root (a mapped uid): until now we ran as the host's root, which
    // is unmapped here, so files we created would be owned by nobody.
    CheckErrno(plan, RawSetresgid(0), ChildStep::kBecomeRoot);
    CheckErrno(plan, RawSetresuid(0), ChildStep::kBecomeRoot);
  }
  Mark(plan, LaunchPhase::kChildReady);
  for (size_t i = 0; i < plan.cgroup_task_fds.size(); ++i) {
    CheckErrno(plan, os::WriteSelfToTaskFile(plan.cgroup_task_fds[i]), ChildStep::kCgroupPlacement,
               static_cast<int>(i));
    close(plan.cgroup_task_fds[i]);
  }
  close(plan.sync_fd);
  if (plan.unshare_cgroup_ns) {
    // Now that we sit in the sandbox's cgroups, a new cgroup namespace roots the sandbox's view
    // of /proc/self/cgroup there. Needs CAP_SYS_ADMIN, so before the capabilities go.
    CheckErrno(plan, unshare(CLONE_NEWCGROUP), ChildStep::kCgroupNamespace);
  }
  Mark(plan, LaunchPhase::kChildPlaced);
  CheckErrno(plan, sethostname(plan.hostname.data(), plan.hostname.size()), ChildStep::kHostname);
  Check(plan, os::BringLoopbackUpRaw(), ChildStep::kLoopback);

  Mark(plan, LaunchPhase::kNamespacesSet);
  Check(plan, os::MakeMountsPrivateRaw(), ChildStep::kPrivateMounts);
  int root = os::MountOverlayRaw(plan.overlay, plan.rootfs_dir.c_str());
  Check(plan, root, ChildStep::kOverlay);
  Mark(plan, LaunchPhase::kOverlayMounted);
  // proc and sysfs must be mounted while the host's instances are still visible in this mount
  // namespace: the kernel refuses a new one in a user namespace otherwise.
  MountProc(plan, root);
  MountSys(plan, root);
  Mark(plan, LaunchPhase::kProcSysMounted);
  MountDev(plan, root);
  Mark(plan, LaunchPhase::kDevMounted);
  for (size_t i = 0; i < plan.binds.size(); ++i) {
    const ChildBind& b = plan.binds[i];
    int target = os::MakePathInRootRaw(root, b.target.c_str(), b.is_dir);
    Check(plan, target, ChildStep::kBindMount, static_cast<int>(i));
    Check(plan, os::MoveMountRaw(b.tree_fd, target), ChildStep::kBindMount, static_cast<int>(i));
    close(target);
  }
  Check(plan, os::PivotRootRaw(root), ChildStep::kPivotRoot);
  close(root);
  Mark(plan, LaunchPhase::kPivoted);

  size_t failed = 0;
  int rc = os::ApplyRlimitsRaw(plan.rlimits.data(), plan.rlimits.size(), &failed);
  Check(plan, rc, ChildStep::kRlimit, static_cast<int>(failed));

  // Without no_new_privs the kernel loads a filter only for a holder of CAP_SYS_ADMIN, which
  // the steps below drop; every call they make is one the profile allows.
  if (!plan.no_new_privs && plan.seccomp != nullptr) {
    Check(plan, plan.seccomp->LoadRaw(), ChildStep::kSeccomp);
  }

  int failed_cap = 0;
  rc = os::DropBoundingSetRaw(plan.capabilities, plan.last_cap, &failed_cap);
  Check(plan, rc, ChildStep::kBoundingSet, failed_cap);
  CheckErrno(plan, RawSetgroups(plan.groups.size(), plan.groups.data()), ChildStep::kGroups);
  CheckErrno(plan, RawSetresgid(plan.gid), ChildStep::kGid);
  // Leaving uid 0 clears the permitted and effective sets (no keepcaps): a non-root user runs
  // with no capabilities, as in Docker; the bounding set stays.
  CheckErrno(plan, RawSetresuid(plan.uid), ChildStep::kUid);
  Check(plan, os::SetCapabilitiesRaw(plan.uid == 0 ? plan.capabilities : 0),
        ChildStep::kCapabilities);

  Mark(plan, LaunchPhase::kCredentialsSet);
  CheckErrno(plan, chdir(plan.working_dir.c_str()), ChildStep::kWorkingDir);
  if (plan.no_new_privs) {
    CheckErrno(plan, prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), ChildStep::kNoNewPrivs);
  }
  // Nothing of the server (sockets, database files, other sandboxes' fds) may reach the
  // sandbox: every fd above stderr closes at exec.
  CheckErrno(plan, static_cast<int>(syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC)),
             ChildStep::kCloseFds);
  if (plan.no_new_privs && plan.seccomp != nullptr) {
    Check(plan, plan.seccomp->LoadRaw(), ChildStep::kSeccomp);
  }
  Mark(plan, LaunchPhase::kSeccompLoaded);

  // Like execvp: report the most telling error (a found-but-unusable file beats "not found").
  int best_err = ENOENT;
  int best_index = 0;
  for (size_t i = 0; i < plan.exec_candidates.size(); ++i) {
    execve(plan.exec_candidates[i].c_str(), plan.argv.data(), plan.envp.data());
    int err = errno;
    if (err != ENOENT && err != ENOTDIR && best_err == ENOENT) {
      best_err = err;
      best_index = static_cast<int>(i);
    }
  }
  Fail(plan, ChildStep::kExec, best_err, best_index);
}

Status ChildFailureToStatus(const ChildFailure& f, const ChildPlan& plan) {
  const std::string& id = plan.sandbox_id;
  std::string why = strerror(f.err);
  auto at = [&](std::string_view what) { return fmt::format("sandbox {}: {}: {}", id, what, why); };
  auto step = static_cast<ChildStep>(f.step);
  auto index = static_cast<size_t>(f.index);
  switch (step) {
    case ChildStep::kExec: {
      std::string cmd = plan.argv.empty() || plan.argv[0] == nullptr ? "" : plan.argv[0];
      if (f.err == ENOENT || f.err == ENOTDIR) {
        std::string tried;
        for (const auto& c : plan.exec_candidates) tried += (tried.empty() ? "" : ", ") + c;
        return FailedPreconditionError(fmt::format(
            "sandbox {}: command '{}' not found in the sandbox (tried {})", id, cmd, tried));
      }
      std::string path = index < plan.exec_candidates.size() ? plan.exec_candidates[index] : cmd;
      return FailedPreconditionError(
          fmt::format("sandbox {}: cannot execute '{}': {}", id, path, why));
    }
    case ChildStep::kWorkingDir:
      return FailedPreconditionError(
          at(fmt::format("working directory '{}' is not usable", plan.working_dir)));
    case ChildStep::kBindMount: {
      std::string target = index < plan.binds.size() ? plan.binds[index].target : "?";
      return FailedPreconditionError(at(fmt::format("bind mount onto '{}'", target)));
    }
    case ChildStep::kOverlay:
      return FailedPreconditionError(
          at("mount overlay root (image layers, upper " + plan.overlay.upper + ")"));
    case ChildStep::kRlimit: {
      std::string name = index < plan.rlimits.size()
                             ? std::string(os::RlimitName(plan.rlimits[index].resource))
                             : "?";
      return InvalidArgumentError(at(fmt::format("set {}", name)));
    }
    case ChildStep::kGid:
    case ChildStep::kUid:
    case ChildStep::kGroups:
      return FailedPreconditionError(at(fmt::format("switch to user {}:{}", plan.uid, plan.gid)));
    case ChildStep::kMaskPath:
      return InternalError(at(fmt::format("mask path #{}", index)));
    case ChildStep::kReadOnlyPath:
      return InternalError(
          at(fmt::format("make /proc/{} read-only", index < 5 ? kReadOnlyProcPaths[index] : "?")));
    case ChildStep::kDevNode:
      return InternalError(at(fmt::format("create /dev/{}", index < 6 ? kDevNodes[index] : "?")));
    case ChildStep::kBecomeRoot:
      return FailedPreconditionError(at("become root of the user namespace"));
    case ChildStep::kSeccomp:
      return InternalError(at("load seccomp filter"));
    default:
      break;
  }
  static const char* const kNames[] = {"?",
                                       "set up stdio",
                                       "new session",
                                       "wait for parent",
                                       "join its cgroups",
                                       "become root",
                                       "cgroup ns",
                                       "set hostname",
                                       "bring up loopback",
                                       "make mounts private",
                                       "overlay",
                                       "mount /proc",
                                       "mask path",
                                       "read-only path",
                                       "mount /sys",
                                       "mount /dev",
                                       "device node",
                                       "mount /dev/pts",
                                       "mount /dev/shm",
                                       "bind mount",
                                       "pivot_root",
                                       "rlimit",
                                       "drop bounding set",
                                       "setgroups",
                                       "setgid",
                                       "setuid",
                                       "set capabilities",
                                       "working dir",
                                       "no_new_privs",
                                       "close fds",
                                       "seccomp",
                                       "exec"};
  static_assert(std::size(kNames) == static_cast<size_t>(ChildStep::kExec) + 1,
                "one name per ChildStep");
  const char* name = f.step > 0 && f.step < static_cast<int32_t>(std::size(kNames))
                         ? kNames[f.step]
                         : "unknown step";
  return InternalError(at(name));
}

}  // namespace warren::runtime::native
