#include "os/tmpfs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/magic.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <memory>

#include "base/unique_fd.h"

namespace warren::os {
namespace {

std::string FsName(long type) {
  switch (static_cast<unsigned long>(type)) {
    case TMPFS_MAGIC:
      return "tmpfs";
    case RAMFS_MAGIC:
      return "ramfs";
    case EXT4_SUPER_MAGIC:
      return "ext4";  // also ext2 and ext3: one magic
    case BTRFS_SUPER_MAGIC:
      return "btrfs";
    case XFS_SUPER_MAGIC:
      return "xfs";
    case OVERLAYFS_SUPER_MAGIC:
      return "overlay";
    default:
      return fmt::format("0x{:x}", static_cast<unsigned long>(type));
  }
}

bool InMemory(long type) {
  return static_cast<unsigned long>(type) == TMPFS_MAGIC ||
         static_cast<unsigned long>(type) == RAMFS_MAGIC;
}

Result<long> FsTypeOf(const std::string& dir) {
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) != 0) return ErrnoError(fmt::format("statfs {}", dir), errno);
  return static_cast<long>(fs.f_type);
}

// The first entry of `dir` other than . and .., or "" when there is none.
Result<std::string> FirstEntry(const std::string& dir) {
  struct Closer {
    void operator()(DIR* d) const { closedir(d); }
  };
  std::unique_ptr<DIR, Closer> d(opendir(dir.c_str()));
  if (d == nullptr) return ErrnoError(fmt::format("opendir {}", dir), errno);
  while (dirent* e = readdir(d.get())) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") return std::string(name);
  }
  return std::string();
}

// Whether `dir` is the root of a mount (statx says so since Linux 5.8).
Result<bool> IsMountRoot(const std::string& dir) {
  struct statx stx {};
  if (statx(AT_FDCWD, dir.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx) != 0) {
    return ErrnoError(fmt::format("statx {}", dir), errno);
  }
  if ((stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) == 0) {
    return FailedPreconditionError(
        fmt::format("statx {}: this kernel does not say whether it is a mount point", dir));
  }
  return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

}  // namespace

Result<bool> EnsureOwnTmpfs(const std::string& dir, unsigned mode, std::string_view tmpfs_options) {
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", dir), errno);
  }
  auto mounted_here = [&]() -> Result<bool> {
    ASSIGN_OR_RETURN(bool root, IsMountRoot(dir));
    if (!root) return false;
    ASSIGN_OR_RETURN(long type, FsTypeOf(dir));
    if (static_cast<unsigned long>(type) == TMPFS_MAGIC) return true;
    return FailedPreconditionError(
        fmt::format("{} is the mount point of a {} filesystem, not a tmpfs", dir, FsName(type)));
  };
  ASSIGN_OR_RETURN(bool already, mounted_here());
  if (already) return false;
  // Locked on the directory underneath, as in EnsureMemoryBackedDir: whoever waited looks again.
  base::UniqueFd lock(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock.valid()) return ErrnoError(fmt::format("open {}", dir), errno);
  if (flock(lock.get(), LOCK_EX) != 0) return ErrnoError(fmt::format("flock {}", dir), errno);
  ASSIGN_OR_RETURN(already, mounted_here());
  if (already) return false;
  ASSIGN_OR_RETURN(std::string entry, FirstEntry(dir));
  if (!entry.empty()) {
    return FailedPreconditionError(
        fmt::format("{} is not empty (it holds {}): a tmpfs over it would hide that", dir, entry));
  }
  const std::string options(tmpfs_options);
  if (mount("warren-tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return ErrnoError(fmt::format("mount tmpfs ({}) on {}", options, dir), errno);
  }
  return true;
}

Result<MemoryBackedDir> EnsureMemoryBackedDir(const std::string& dir, unsigned mode,
                                              std::string_view tmpfs_options) {
  if (mkdir(dir.c_str(), mode) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", dir), errno);
  }
  MemoryBackedDir out;
  ASSIGN_OR_RETURN(long type, FsTypeOf(dir));
  out.fs = FsName(type);
  if (InMemory(type)) return out;
  // The lock is on the directory underneath: whoever waited for it looks again and finds the
  // tmpfs the first one mounted, instead of stacking a second one over it.
  base::UniqueFd lock(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!lock.valid()) return ErrnoError(fmt::format("open {}", dir), errno);
  if (flock(lock.get(), LOCK_EX) != 0) return ErrnoError(fmt::format("flock {}", dir), errno);
  ASSIGN_OR_RETURN(type, FsTypeOf(dir));
  if (InMemory(type)) return out;
  ASSIGN_OR_RETURN(std::string entry, FirstEntry(dir));
  if (!entry.empty()) {
    out.action = MemoryBackedDir::Action::kLeftOnDisk;
    out.why =
        fmt::format("{} is not empty (it holds {}): a tmpfs over it would hide that", dir, entry);
    return out;
  }
  const std::string options(tmpfs_options);
  if (mount("warren-tmpfs", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, options.c_str()) != 0) {
    return ErrnoError(fmt::format("mount tmpfs ({}) on {}", options, dir), errno);
  }
  out.action = MemoryBackedDir::Action::kMounted;
  return out;
}

}  // namespace warren::os
