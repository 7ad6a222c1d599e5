#pragma once

#include <fcntl.h>
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// ---------------------------------------------------------------------------------------------
// Host side: reading the mount table and managing detached mount trees (new mount API).

// One line of /proc/<pid>/mountinfo.
struct MountEntry {
  int id = 0;
  int parent_id = 0;
  std::string root;         // the path inside the filesystem that is mounted
  std::string mount_point;  // unescaped
  std::string options;      // per-mount options ("rw,nosuid,...")
  std::string fs_type;
  std::string source;
  std::string super_options;
};

// Parses mountinfo text; octal escapes (\040 for a space) are decoded. InvalidArgument names
// the malformed line.
Result<std::vector<MountEntry>> ParseMountInfo(std::string_view text);
// Reads /proc/<pid>/mountinfo; pid 0 reads /proc/self/mountinfo.
Result<std::vector<MountEntry>> ReadMountInfo(pid_t pid = 0);

// open_tree(OPEN_TREE_CLONE) of `path` (recursive), optionally made read-only: a detached
// mount that can be attached elsewhere — also inside another mount namespace, by a child that
// inherited the fd — with AttachMountTree or MoveMountRaw. NotFound names a missing path.
Result<base::UniqueFd> CloneMountTree(const std::string& path, bool read_only);
// The same of what `fd` (an O_PATH fd, say) refers to, so the tree is exactly the file that
// was resolved, never a path walked again. `attrs` (MOUNT_ATTR_RDONLY, _NODEV, ...) are set on
// every mount of the tree.
Result<base::UniqueFd> CloneMountTreeAt(int fd, unsigned attrs);

// Resolving paths that something untrusted can write into (volumes a sandbox fills). Each
// returns an O_PATH | O_CLOEXEC fd of what it resolved: use it (CloneMountTreeAt, *at calls),
// never the path again. A symlink met on the way is FailedPrecondition naming the path.

// `path` (absolute) as it is, refusing a symlink in any component:
// openat2(RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS).
Result<base::UniqueFd> OpenPathNoSymlinks(const std::string& path);
// `relative` beneath dir_fd: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
// RESOLVE_NO_MAGICLINKS), so neither a symlink nor ".." can lead out of it. NotFound when a
// component is missing.
Result<base::UniqueFd> OpenBeneath(int dir_fd, const std::string& relative, int flags = O_PATH);
// move_mount(2) of a detached tree onto `target`.
Status AttachMountTree(int tree_fd, const std::string& target);
// umount2(path, MNT_DETACH).
Status UnmountDetach(const std::string& path);

// ---------------------------------------------------------------------------------------------
// Child side: the steps that build a sandbox's root. Async-signal-safe (no allocation), as
// they run in a cloned child (see os/clone.h). Each returns a value >= 0 on success (an fd
// where documented) and -errno on failure.

// openat2(root_fd, path, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS): `path` is resolved as if
// root_fd were "/", so symlinks planted in an image cannot point outside the sandbox root.
int OpenInRootRaw(int root_fd, const char* path, int flags) noexcept;

// Resolves `path` inside root_fd like OpenInRootRaw, creating missing directories (0755) and,
// when !leaf_is_dir, an empty regular file as the leaf. Returns an O_PATH fd of the leaf, the
// target for MoveMountRaw.
int MakePathInRootRaw(int root_fd, const char* path, bool leaf_is_dir) noexcept;

// A fresh filesystem (fsopen/fsconfig/fsmount) attached onto target_fd. `options` is a
// null-terminated list of key, value pairs; a null value sets a flag. `attrs` are
// MOUNT_ATTR_* flags (nosuid, nodev, noexec, rdonly). Returns the new mount's root fd.
int MountFilesystemRaw(const char* fs_type, const char* const* options, unsigned attrs,
                       int target_fd) noexcept;

// open_tree(OPEN_TREE_CLONE) of dirfd/path (path "" means dirfd itself), read-only when asked.
int CloneTreeRaw(int dirfd, const char* path, bool recursive, bool read_only) noexcept;
// Attaches a detached tree onto target_fd (move_mount with both paths empty).
int MoveMountRaw(int tree_fd, int target_fd) noexcept;
// Bind-mounts target_fd onto itself read-only (how /proc/sys and friends become read-only).
int RemountReadOnlyRaw(int target_fd) noexcept;
// Makes every mount in the current namespace private so nothing propagates to the host.
int MakeMountsPrivateRaw() noexcept;
// pivot_root into new_root_fd (a mount root), detach the old root, chdir("/").
int PivotRootRaw(int new_root_fd) noexcept;

}  // namespace warren::os
