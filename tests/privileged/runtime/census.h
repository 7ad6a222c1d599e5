#pragma once

#include <sys/types.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace warren::runtime::testing {

// Counts of what a sandbox could leave behind in this process and on the host.
struct Census {
  size_t mounts = 0;  // lines of /proc/self/mountinfo
  size_t fds = 0;     // entries of /proc/self/fd
};
Census TakeCensus();

// The namespace inodes of process `pid` (all of /proc/<pid>/ns/*).
std::set<uint64_t> NamespaceInodes(pid_t pid);

// The namespaces a sandbox had and when it was destroyed (clock ticks since boot).
struct NamespaceRecord {
  std::set<uint64_t> inodes;
  uint64_t destroyed_at = 0;
};

// Host processes that are in, or hold an fd of, a recorded namespace (scans /proc/*/ns and
// /proc/*/fd). The kernel recycles namespace inode numbers, so only processes that started
// before the sandbox was destroyed count: a later one holds a new namespace that reuses the
// number. Empty when every namespace is gone.
std::vector<pid_t> NamespaceHolders(const std::vector<NamespaceRecord>& records);

// Now, in clock ticks since boot (the unit of process start times).
uint64_t TicksSinceBoot();

// Whether process `pid` still exists with the given start time.
bool ProcessAlive(pid_t pid, uint64_t start_time);

// Entries of a directory (names), empty when it does not exist.
std::vector<std::string> DirEntries(const std::string& dir);

}  // namespace warren::runtime::testing
