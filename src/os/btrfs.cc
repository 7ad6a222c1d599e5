#include "os/btrfs.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.h"

namespace warren::os {
namespace {

// The root directory of every btrfs subvolume has this inode number.
constexpr ino_t kSubvolumeRootInode = BTRFS_FIRST_FREE_OBJECTID;

Result<base::UniqueFd> OpenDir(const std::string& path) {
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  return fd;
}

Status CheckName(const std::string& name) {
  if (name.empty() || name.size() > BTRFS_SUBVOL_NAME_MAX || name == "." || name == ".." ||
      name.find('/') != std::string::npos) {
    return InvalidArgumentError(fmt::format("\"{}\" is not a subvolume name", name));
  }
  return Status::Ok();
}

}  // namespace

Result<bool> IsBtrfs(const std::string& path) {
  struct statfs st;
  if (statfs(path.c_str(), &st) != 0) return ErrnoError(fmt::format("statfs {}", path), errno);
  return static_cast<uint64_t>(st.f_type) == BTRFS_SUPER_MAGIC;
}

Status EnableQuota(const std::string& mount_root) {
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenDir(mount_root));
  struct btrfs_ioctl_quota_ctl_args args;
  memset(&args, 0, sizeof args);
  args.cmd = BTRFS_QUOTA_CTL_ENABLE;
  if (ioctl(fd.get(), BTRFS_IOC_QUOTA_CTL, &args) != 0) {
    return ErrnoError(fmt::format("enable btrfs quota on {}", mount_root), errno);
  }
  return Status::Ok();
}

Status CreateSubvolume(const std::string& parent, const std::string& name) {
  RETURN_IF_ERROR(CheckName(name));
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenDir(parent));
  struct btrfs_ioctl_vol_args_v2 args;
  memset(&args, 0, sizeof args);
  memcpy(args.name, name.data(), name.size());
  if (ioctl(fd.get(), BTRFS_IOC_SUBVOL_CREATE_V2, &args) != 0) {
    return ErrnoError(fmt::format("create subvolume {}/{}", parent, name), errno);
  }
  return Status::Ok();
}

bool IsSubvolume(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return false;
  if (st.st_ino != kSubvolumeRootInode) return false;
  auto btrfs = IsBtrfs(path);
  return btrfs.ok() && *btrfs;
}

Status SetSubvolumeLimit(const std::string& subvolume, uint64_t max_bytes) {
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenDir(subvolume));
  struct btrfs_ioctl_qgroup_limit_args args;
  memset(&args, 0, sizeof args);
  args.qgroupid = 0;  // the quota group of the subvolume fd is in
  args.lim.flags = BTRFS_QGROUP_LIMIT_MAX_RFER;
  args.lim.max_rfer = max_bytes == 0 ? static_cast<uint64_t>(-1) : max_bytes;
  if (ioctl(fd.get(), BTRFS_IOC_QGROUP_LIMIT, &args) != 0) {
    return ErrnoError(fmt::format("limit subvolume {} to {} bytes", subvolume, max_bytes), errno);
  }
  return Status::Ok();
}

Status DestroySubvolume(const std::string& parent, const std::string& name) {
  RETURN_IF_ERROR(CheckName(name));
  ASSIGN_OR_RETURN(base::UniqueFd fd, OpenDir(parent));
  struct btrfs_ioctl_vol_args args;
  memset(&args, 0, sizeof args);
  memcpy(args.name, name.data(), name.size());
  if (ioctl(fd.get(), BTRFS_IOC_SNAP_DESTROY, &args) != 0) {
    return ErrnoError(fmt::format("destroy subvolume {}/{}", parent, name), errno);
  }
  return Status::Ok();
}

}  // namespace warren::os
