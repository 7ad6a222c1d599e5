#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace warren::os {

// Btrfs subvolumes with quota-group limits: a per-directory space limit the kernel enforces
// at write time (a write past it fails with EDQUOT, whoever writes: btrfs quotas have no
// CAP_SYS_RESOURCE bypass). Each call is one or two ioctls (tens of microseconds measured),
// so a limit costs nothing noticeable at sandbox create. Stateless functions; thread-safe.

// Whether `path` is on a btrfs file system (statfs).
Result<bool> IsBtrfs(const std::string& path);

// Turns quota groups on for the file system mounted at `mount_root` (BTRFS_IOC_QUOTA_CTL);
// a no-op when they are on already. Needed once per file system, before limits apply.
Status EnableQuota(const std::string& mount_root);

// Makes `parent`/`name` a new, empty subvolume (mode 0755, owned by the caller).
// AlreadyExists when the name is taken.
Status CreateSubvolume(const std::string& parent, const std::string& name);

// Whether `path` is the root of a btrfs subvolume (inode 256 on btrfs).
bool IsSubvolume(const std::string& path);

// Limits what the subvolume whose root is `subvolume` may reference to `max_bytes`
// (BTRFS_IOC_QGROUP_LIMIT on its own quota group); 0 removes the limit.
Status SetSubvolumeLimit(const std::string& subvolume, uint64_t max_bytes);

// Deletes subvolume `parent`/`name` with everything in it (BTRFS_IOC_SNAP_DESTROY: the space
// is freed in the background; the kernel drops its quota group once it is). NotFound when
// there is no such entry.
Status DestroySubvolume(const std::string& parent, const std::string& name);

}  // namespace warren::os
