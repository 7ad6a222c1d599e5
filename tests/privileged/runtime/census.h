#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace warren::runtime::testing {

// Counts of what a sandbox could leave behind in this process and on the host.
struct Census {
  // Mounts of the host's mount namespace under `root`: where a sandbox's rootfs or the
  // runtime's idmapped layers would show if they leaked. (Other tests mount elsewhere at the
  // same time, so the whole table is not a stable count.)
  size_t mounts = 0;
  size_t fds = 0;  // entries of /proc/self/fd
};
Census TakeCensus(const std::string& root);

// The namespace inodes of process `pid` (all of /proc/<pid>/ns/*).
std::set<uint64_t> NamespaceInodes(pid_t pid);

// The namespaces a sandbox had, and a moment (clock ticks since boot) when they still existed:
// taken just before Destroy.
struct NamespaceRecord {
  std::set<uint64_t> inodes;
  uint64_t alive_at = 0;
};

// Processes that are in, or hold an fd of, a recorded namespace (scans /proc/*/ns and
// /proc/*/fd). Only processes that could hold one legitimately are looked at: this process,
// its descendants, and anything in a cgroup under `cgroup_parent`. The kernel recycles
// namespace inode numbers as soon as a namespace is freed, and other tests and benches on the
// machine make namespaces all the time, so a host-wide scan finds unrelated holders of reused
// numbers. For the same reason only processes that started strictly before `alive_at` count.
// Empty when every namespace is gone.
std::vector<pid_t> NamespaceHolders(const std::vector<NamespaceRecord>& records,
                                    const std::string& cgroup_parent);

// Now, in clock ticks since boot (the unit of process start times).
uint64_t TicksSinceBoot();

// Whether process `pid` still exists with the given start time.
bool ProcessAlive(pid_t pid, uint64_t start_time);

}  // namespace warren::runtime::testing
