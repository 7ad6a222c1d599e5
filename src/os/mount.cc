#include "os/mount.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {
namespace {

std::string Unescape(std::string_view s) {
  auto octal = [](char c) { return c >= '0' && c <= '7'; };
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && octal(s[i + 1]) && octal(s[i + 2]) && octal(s[i + 3])) {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

Result<std::vector<MountEntry>> ParseMountInfo(std::string_view text) {
  std::vector<MountEntry> out;
  for (std::string_view line : base::Split(text, '\n')) {
    if (base::TrimSpace(line).empty()) continue;
    auto f = base::SplitNonEmpty(line, ' ');
    // id parent major:minor root mount_point options [optional...] - type source super
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (f.size() < 10 || dash == 0 || dash + 3 > f.size()) {
      return InvalidArgumentError(fmt::format("mountinfo: malformed line '{}'", line));
    }
    auto id = base::ParseInt64(f[0]);
    auto parent = base::ParseInt64(f[1]);
    if (!id || !parent) {
      return InvalidArgumentError(fmt::format("mountinfo: bad mount id in '{}'", line));
    }
    MountEntry e;
    e.id = static_cast<int>(*id);
    e.parent_id = static_cast<int>(*parent);
    e.root = Unescape(f[3]);
    e.mount_point = Unescape(f[4]);
    e.options = std::string(f[5]);
    e.fs_type = std::string(f[dash + 1]);
    e.source = Unescape(f[dash + 2]);
    if (dash + 3 < f.size()) e.super_options = std::string(f[dash + 3]);
    out.push_back(std::move(e));
  }
  return out;
}

Result<std::vector<MountEntry>> ReadMountInfo(pid_t pid) {
  std::string path = pid == 0 ? "/proc/self/mountinfo" : fmt::format("/proc/{}/mountinfo", pid);
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path, 64 << 20));
  return ParseMountInfo(text);
}

Result<base::UniqueFd> CloneMountTree(const std::string& path, bool read_only) {
  int fd = CloneTreeRaw(AT_FDCWD, path.c_str(), /*recursive=*/true, read_only);
  if (fd < 0) return ErrnoError(fmt::format("clone mount tree of {}", path), -fd);
  return base::UniqueFd(fd);
}

Result<base::UniqueFd> CloneMountTreeAt(int fd, unsigned attrs) {
  base::UniqueFd tree(
      open_tree(fd, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE));
  if (!tree) return ErrnoError("clone mount tree", errno);
  if (attrs != 0) {
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = attrs;
    if (mount_setattr(tree.get(), "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) {
      return ErrnoError("set mount attributes", errno);
    }
  }
  return tree;
}

namespace {

Result<base::UniqueFd> OpenHow(int dir_fd, const std::string& path, int flags, uint64_t resolve,
                               std::string_view shown) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  // No O_NOFOLLOW: with O_PATH it would hand back a trailing symlink itself, where
  // RESOLVE_NO_SYMLINKS alone refuses it (ELOOP).
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.resolve = resolve;
  long fd;
  do {
    fd = syscall(SYS_openat2, dir_fd, path.c_str(), &how, sizeof how);
  } while (fd < 0 && (errno == EINTR || errno == EAGAIN));
  if (fd >= 0) return base::UniqueFd(static_cast<int>(fd));
  switch (errno) {
    case ELOOP:
      return FailedPreconditionError(
          fmt::format("{}: a component is a symlink, which is not followed here", shown));
    case EXDEV:
      return FailedPreconditionError(fmt::format("{}: leads outside its directory", shown));
    case ENOENT:
      return NotFoundError(fmt::format("{} does not exist", shown));
    default:
      return ErrnoError(fmt::format("open {}", shown), errno);
  }
}

}  // namespace

Result<base::UniqueFd> OpenPathNoSymlinks(const std::string& path) {
  if (path.empty() || path.front() != '/') {
    return InvalidArgumentError(fmt::format("'{}' is not an absolute path", path));
  }
  return OpenHow(AT_FDCWD, path, O_PATH, RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, path);
}

Result<base::UniqueFd> OpenBeneath(int dir_fd, const std::string& relative, int flags) {
  if (relative.empty() || relative.front() == '/') {
    return InvalidArgumentError(fmt::format("'{}' is not a relative path", relative));
  }
  return OpenHow(dir_fd, relative, flags,
                 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS, relative);
}

Status AttachMountTree(int tree_fd, const std::string& target) {
  if (move_mount(tree_fd, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    return ErrnoError(fmt::format("attach mount at {}", target), errno);
  }
  return Status::Ok();
}

Status UnmountDetach(const std::string& path) {
  if (umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0) {
    return ErrnoError(fmt::format("unmount {}", path), errno);
  }
  return Status::Ok();
}

int OpenInRootRaw(int root_fd, const char* path, int flags) noexcept {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = static_cast<uint64_t>(flags) | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  for (;;) {
    long fd = syscall(SYS_openat2, root_fd, path, &how, sizeof how);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno != EINTR && errno != EAGAIN) return -errno;
  }
}

int MakePathInRootRaw(int root_fd, const char* path, bool leaf_is_dir) noexcept {
  char buf[PATH_MAX];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof buf) return -ENAMETOOLONG;
  memcpy(buf, path, len + 1);
  // Walk prefixes: at each '/', open what exists so far and create the next component in it.
  int parent = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
  if (parent < 0) return -errno;
  size_t start = 0;
  while (start < len) {
    while (start < len && buf[start] == '/') ++start;
    if (start >= len) break;
    size_t end = start;
    while (end < len && buf[end] != '/') ++end;
    bool leaf = true;
    for (size_t k = end; k < len; ++k) {
      if (buf[k] != '/') {
        leaf = false;
        break;
      }
    }
    char saved = buf[end];
    buf[end] = '\0';
    const char* name = buf + start;
    if (strcmp(name, "..") == 0) {
      close(parent);
      return -EINVAL;
    }
    int fd = OpenInRootRaw(root_fd, buf, O_PATH);
    if (fd == -ENOENT) {
      int rc;
      if (leaf && !leaf_is_dir) {
        rc = openat(parent, name, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (rc >= 0) close(rc);
      } else {
        rc = mkdirat(parent, name, 0755);
      }
      if (rc < 0 && errno != EEXIST) {
        int err = errno;
        close(parent);
        return -err;
      }
      fd = OpenInRootRaw(root_fd, buf, O_PATH);
    }
    buf[end] = saved;
    close(parent);
    if (fd < 0) return fd;
    parent = fd;
    start = end;
  }
  return parent;
}

int MountFilesystemRaw(const char* fs_type, const char* const* options, unsigned attrs,
                       int target_fd) noexcept {
  int fs = fsopen(fs_type, FSOPEN_CLOEXEC);
  if (fs < 0) return -errno;
  for (const char* const* kv = options; kv != nullptr && kv[0] != nullptr; kv += 2) {
    int rc = kv[1] == nullptr ? fsconfig(fs, FSCONFIG_SET_FLAG, kv[0], nullptr, 0)
                              : fsconfig(fs, FSCONFIG_SET_STRING, kv[0], kv[1], 0);
    if (rc != 0) {
      int err = errno;
      close(fs);
      return -err;
    }
  }
  if (fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0) != 0) {
    int err = errno;
    close(fs);
    return -err;
  }
  int mnt = fsmount(fs, FSMOUNT_CLOEXEC, attrs);
  int err = errno;
  close(fs);
  if (mnt < 0) return -err;
  if (move_mount(mnt, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) {
    err = errno;
    close(mnt);
    return -err;
  }
  return mnt;
}

int CloneTreeRaw(int dirfd, const char* path, bool recursive, bool read_only) noexcept {
  unsigned flags = OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC;
  if (path[0] == '\0') flags |= AT_EMPTY_PATH;
  if (recursive) flags |= AT_RECURSIVE;
  int tree = open_tree(dirfd, path, flags);
  if (tree < 0) return -errno;
  if (read_only) {
    struct mount_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.attr_set = MOUNT_ATTR_RDONLY;
    if (mount_setattr(tree, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &attr,
                      sizeof attr) != 0) {
      int err = errno;
      close(tree);
      return -err;
    }
  }
  return tree;
}

int MoveMountRaw(int tree_fd, int target_fd) noexcept {
  if (move_mount(tree_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) !=
      0) {
    return -errno;
  }
  return 0;
}

int RemountReadOnlyRaw(int target_fd) noexcept {
  int tree = CloneTreeRaw(target_fd, "", /*recursive=*/true, /*read_only=*/true);
  if (tree < 0) return tree;
  int rc = MoveMountRaw(tree, target_fd);
  close(tree);
  return rc;
}

int MakeMountsPrivateRaw() noexcept {
  if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) return -errno;
  return 0;
}

int PivotRootRaw(int new_root_fd) noexcept {
  if (fchdir(new_root_fd) != 0) return -errno;
  // pivot_root(".", "."): the old root ends up on top of the new one and is detached at once,
  // so no directory for it is needed inside the sandbox.
  if (syscall(SYS_pivot_root, ".", ".") != 0) return -errno;
  if (umount2(".", MNT_DETACH) != 0) return -errno;
  if (chdir("/") != 0) return -errno;
  return 0;
}

}  // namespace warren::os
