#pragma once

#include <sys/types.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "os/mount.h"

namespace warren::os {

enum class CgroupVersion { kV1, kV2 };
std::string_view CgroupVersionName(CgroupVersion v);  // "v1", "v2"

// The v1 controllers a sandbox is placed in.
inline constexpr std::array<std::string_view, 6> kV1Controllers = {"memory", "cpu",     "cpuacct",
                                                                   "pids",   "freezer", "devices"};

// Where the cgroup hierarchies are mounted on this machine. Value type.
struct CgroupHierarchies {
  CgroupVersion version = CgroupVersion::kV1;
  // v1: controller name → mount point (co-mounted controllers share one, e.g. cpu,cpuacct).
  std::map<std::string, std::string, std::less<>> v1;
  // The cgroup2 mount point ("" when none is mounted).
  std::string unified;

  // Reads the mount table. With no preference: v1 when the v1 memory controller is mounted
  // (hybrid hosts such as this one), else v2. FailedPrecondition when the requested version is
  // not mounted, or v1 lacks one of kV1Controllers.
  static Result<CgroupHierarchies> Detect(std::optional<CgroupVersion> prefer = std::nullopt);
  static Result<CgroupHierarchies> FromMounts(const std::vector<MountEntry>& mounts,
                                              std::optional<CgroupVersion> prefer);

  // The distinct directories `relative` has in the hierarchies this version uses.
  std::vector<std::string> DirsFor(std::string_view relative) const;
};

// CPU weights on cgroup v2's scale: the kernel's default for a new group (v1: cpu.shares
// 1024) and the range it accepts.
inline constexpr int kDefaultCpuWeight = 100;
inline constexpr int kMinCpuWeight = 1;
inline constexpr int kMaxCpuWeight = 10000;

// Limits for one group. Zero means "no limit" for each field.
struct CgroupLimits {
  int64_t cpu_quota_us = 0;
  int64_t cpu_period_us = 100000;
  // The group's share of contended CPU against its siblings, on cgroup v2's scale (1-10000,
  // kDefaultCpuWeight = the kernel's default; v1 writes cpu.shares = weight * 1024 / 100).
  // 0 leaves it as it is. A scheduling preference, not a limit: skipped where the cpu
  // controller is not available.
  int cpu_weight = 0;
  int64_t memory_bytes = 0;
  int64_t pids = 0;
  // Deny every device but DefaultDeviceRules() (os/device_policy.h: null, zero, full, random,
  // urandom, tty, ptmx, pts; mknod of any, as runc): v1 through the devices controller, v2
  // with a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the group (FailedPrecondition when
  // the kernel cannot load it).
  bool restrict_devices = true;
};

struct CgroupStats {
  uint64_t cpu_usage_ns = 0;
  uint64_t memory_bytes = 0;              // usage including page cache
  uint64_t memory_working_set_bytes = 0;  // usage minus inactive file cache (what kubelet uses)
  uint64_t memory_limit_bytes = 0;        // 0 = unlimited or not available
  uint64_t pids = 0;
  uint64_t oom_kills = 0;
  bool has_memory = false;  // false when the memory controller is not available (v2 here)
};

// One group (e.g. "warren/<id>") in every hierarchy it belongs to. Owns the directories: the
// destructor removes them (killing what is left inside) unless Release()d — so a sandbox whose
// creation fails halfway leaves no cgroup behind. Move-only. Methods are not synchronized;
// callers serialize per group.
class Cgroup {
 public:
  // mkdir of `relative` in each hierarchy (parents created as needed and kept).
  // AlreadyExists when the group exists.
  static Result<Cgroup> Create(const CgroupHierarchies& h, std::string relative);
  // An existing group, owned from now on (adoption). NotFound when it exists nowhere.
  static Result<Cgroup> Open(const CgroupHierarchies& h, std::string relative);

  Cgroup() = default;
  Cgroup(Cgroup&& other) noexcept;
  Cgroup& operator=(Cgroup&& other) noexcept;
  Cgroup(const Cgroup&) = delete;
  Cgroup& operator=(const Cgroup&) = delete;
  ~Cgroup();

  const std::string& relative() const { return relative_; }
  CgroupVersion version() const { return h_.version; }
  std::vector<std::string> Dirs() const { return h_.DirsFor(relative_); }

  // FailedPrecondition when a limit needs a controller that is not available (v2 here).
  Status SetLimits(const CgroupLimits& limits);
  // CgroupLimits::cpu_weight alone (one write). InvalidArgument outside 1-10000; OK without
  // doing anything where the cpu controller is not available.
  Status SetCpuWeight(int weight);
  // v2: the group's directory, for CLONE_INTO_CGROUP.
  Result<base::UniqueFd> OpenUnifiedDir() const;
  // v1: the `tasks` file of every hierarchy, open for writing, so that a single-threaded child
  // can move itself by writing "0" to each (WriteSelfToTaskFile). The kernel checks the
  // opener's credentials, so a child that has since entered a user namespace may still do it.
  // Moving one thread, the caller itself, skips the global lock that cgroup.procs takes, whose
  // writer waits for an RCU grace period (10-20 ms on a busy host without favordynmods).
  Result<std::vector<base::UniqueFd>> OpenTaskFiles() const;

  Status Freeze(std::chrono::milliseconds timeout);
  Status Thaw(std::chrono::milliseconds timeout);
  Result<bool> IsFrozen() const;

  Result<CgroupStats> Stats() const;
  // The group's CPU time alone (one file), for a caller that skips the rest while it stays put.
  Result<uint64_t> CpuUsageNs() const;
  // Every process in the group.
  Result<std::vector<pid_t>> Pids() const;
  // SIGKILL to every process in the group (v2: cgroup.kill), thawing it so the signal lands.
  Status KillAll();
  // Kills what is left, then removes every directory, retrying while the kernel still
  // reports it busy. The object is empty afterwards.
  Status Remove(std::chrono::milliseconds timeout);
  // Forgets the group without removing it (it outlives this process: adoption).
  void Release() { relative_.clear(); }

 private:
  Cgroup(CgroupHierarchies h, std::string relative)
      : h_(std::move(h)), relative_(std::move(relative)) {}
  std::string V1Dir(std::string_view controller) const;
  std::string UnifiedDir() const;

  CgroupHierarchies h_;
  std::string relative_;  // empty when released or removed
};

// Moves the calling thread into the group whose `tasks` file `fd` is (Cgroup::OpenTaskFiles).
// Async-signal-safe, for a freshly cloned child: 0, or -1 with errno set.
int WriteSelfToTaskFile(int fd) noexcept;

// Names of the groups directly under `parent` in any of the hierarchies in use (orphan scan).
Result<std::vector<std::string>> ListCgroupChildren(const CgroupHierarchies& h,
                                                    std::string_view parent);

// Helpers for stat files: the value of `key` in a flat-keyed file ("key value" lines).
std::optional<uint64_t> FlatKeyedValue(std::string_view text, std::string_view key);

}  // namespace warren::os
