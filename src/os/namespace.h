#pragma once

#include <sys/types.h>

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// The Linux namespaces a sandbox uses.
enum class Namespace { kUser, kMount, kPid, kUts, kIpc, kNet, kCgroup };

inline constexpr std::array<Namespace, 7> kAllNamespaces = {
    Namespace::kUser, Namespace::kMount, Namespace::kPid,   Namespace::kUts,
    Namespace::kIpc,  Namespace::kNet,   Namespace::kCgroup};

// The name under /proc/<pid>/ns/ ("user", "mnt", "pid", "uts", "ipc", "net", "cgroup").
std::string_view NamespaceName(Namespace ns);
// The CLONE_NEW* flag.
uint64_t NamespaceCloneFlag(Namespace ns);

// Opens /proc/<pid>/ns/<name> (O_RDONLY | O_CLOEXEC), usable with setns(2).
Result<base::UniqueFd> OpenNamespace(pid_t pid, Namespace ns);
// The inode number that identifies the namespace (what `ls -l /proc/<pid>/ns` shows).
Result<uint64_t> NamespaceInode(pid_t pid, Namespace ns);

// One line of a uid_map or gid_map: ids [inside, inside+count) in the namespace are
// [outside, outside+count) outside it.
struct IdMapping {
  uint32_t inside = 0;
  uint32_t outside = 0;
  uint32_t count = 0;
  friend bool operator==(const IdMapping&, const IdMapping&) = default;
};

// "0 100000 65536\n".
std::string FormatIdMapping(const IdMapping& m);

// Writes /proc/<pid>/uid_map and gid_map of a child in a new user namespace. The caller must
// hold CAP_SETUID/CAP_SETGID in the parent namespace (root on the host).
Status WriteIdMappings(pid_t pid, const IdMapping& uids, const IdMapping& gids);

}  // namespace warren::os
