#include "envd/filesystem_ops.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include "base/unique_fd.h"
#include "envd/paths.h"

namespace warren::envd {
namespace {

constexpr std::string_view kXattrPrefix = "user.e2b.";

base::WallTime MtimeOf(const struct stat& st) {
  return base::WallTime(std::chrono::duration_cast<base::WallTime::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

std::string BaseName(const std::string& path) {
  if (path == "/") return "/";
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string DirName(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

Status PathError(const std::string& path, int err) {
  if (err == ENOENT) return NotFoundError(fmt::format("path '{}' does not exist", path));
  if (err == ENOTDIR) {
    return InvalidArgumentError(fmt::format("a parent of path '{}' is not a directory", path));
  }
  return ErrnoError(fmt::format("path '{}'", path), err);
}

// Sorted names of a directory (lexical byte order), without "." and "..".
Result<std::vector<std::string>> ReadNames(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return PathError(dir, errno);
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  return names;
}

Status RemoveAt(int parent, const char* name) {
  if (unlinkat(parent, name, 0) == 0 || errno == ENOENT) return Status::Ok();
  if (errno != EISDIR && errno != EPERM) return ErrnoError(fmt::format("unlink '{}'", name), errno);
  int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(fmt::format("open '{}'", name), errno);
  }
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return ErrnoError(fmt::format("open '{}'", name), errno);
  }
  std::vector<std::string> children;
  while (dirent* e = readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") children.emplace_back(n);
  }
  Status status;
  for (const auto& c : children) {
    status = RemoveAt(dirfd(d), c.c_str());
    if (!status.ok()) break;
  }
  closedir(d);
  RETURN_IF_ERROR(status);
  if (unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("rmdir '{}'", name), errno);
  }
  return Status::Ok();
}

}  // namespace

std::string GoPermissionString(mode_t mode) {
  std::string out;
  // Go's type letters in order "dalTLDpSugct?", for the bits a stat mode can carry.
  if (S_ISDIR(mode)) out += 'd';
  if (S_ISLNK(mode)) out += 'L';
  if (S_ISBLK(mode) || S_ISCHR(mode)) out += 'D';
  if (S_ISFIFO(mode)) out += 'p';
  if (S_ISSOCK(mode)) out += 'S';
  if (mode & S_ISUID) out += 'u';
  if (mode & S_ISGID) out += 'g';
  if (S_ISCHR(mode)) out += 'c';
  if (mode & S_ISVTX) out += 't';
  if (out.empty()) out += '-';
  const char* rwx = "rwxrwxrwx";
  for (int i = 0; i < 9; ++i) out += (mode & (1 << (8 - i))) ? rwx[i] : '-';
  return out;
}

struct FilesystemOps::NameCache {
  std::map<uid_t, std::string> users;
  std::map<gid_t, std::string> groups;
};

Result<EntryInfo> FilesystemOps::MakeEntry(const std::string& path, NameCache& names) const {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) return PathError(path, errno);
  EntryInfo e;
  e.name = BaseName(path);
  e.path = path;
  e.size = st.st_size;
  e.permissions = GoPermissionString(st.st_mode);
  e.modified_time = MtimeOf(st);
  mode_t type_mode = st.st_mode;
  if (S_ISLNK(st.st_mode)) {
    // E2B reports the target's type and permission bits, and the fully resolved target.
    struct stat target;
    char resolved[PATH_MAX];
    if (stat(path.c_str(), &target) == 0) {
      type_mode = target.st_mode;
      e.mode = target.st_mode & 0777;
    } else {
      type_mode = 0;
    }
    if (realpath(path.c_str(), resolved)) {
      e.symlink_target = resolved;
    } else {
      char link[PATH_MAX];
      ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
      if (n >= 0) {
        std::string t(link, static_cast<size_t>(n));
        e.symlink_target = t.front() == '/' ? CleanPath(t) : CleanPath(DirName(path) + "/" + t);
      }
    }
  } else {
    e.mode = st.st_mode & 0777;
  }
  if (S_ISREG(type_mode)) {
    e.type = FileType::kFile;
  } else if (S_ISDIR(type_mode)) {
    e.type = FileType::kDirectory;
  }
  auto user = names.users.find(st.st_uid);
  if (user == names.users.end()) {
    user = names.users.emplace(st.st_uid, users_.UserName(st.st_uid)).first;
  }
  auto group = names.groups.find(st.st_gid);
  if (group == names.groups.end()) {
    group = names.groups.emplace(st.st_gid, users_.GroupName(st.st_gid)).first;
  }
  e.owner = user->second;
  e.group = group->second;
  if (S_ISREG(st.st_mode)) e.metadata = GetMetadata(path);
  return e;
}

Result<EntryInfo> FilesystemOps::Stat(const std::string& path) const {
  NameCache names;
  return MakeEntry(path, names);
}

Status FilesystemOps::MakeDirs(const std::string& path, const os::UserInfo& owner,
                               bool* created_last) const {
  if (created_last) *created_last = false;
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return Status::Ok();
    return InvalidArgumentError(
        fmt::format("path '{}' already exists and is not a directory", path));
  }
  if (path == "/") return Status::Ok();
  RETURN_IF_ERROR(MakeDirs(DirName(path), owner, nullptr));
  if (mkdir(path.c_str(), 0755) != 0) {
    if (errno == EEXIST) return Status::Ok();  // a concurrent mkdir won
    return ErrnoError(fmt::format("mkdir '{}'", path), errno);
  }
  if (lchown(path.c_str(), owner.uid, owner.gid) != 0) {
    return ErrnoError(fmt::format("chown '{}'", path), errno);
  }
  if (created_last) *created_last = true;
  return Status::Ok();
}

Status FilesystemOps::MakeParents(const std::string& path, const os::UserInfo& owner) const {
  return MakeDirs(DirName(path), owner, nullptr);
}

Result<EntryInfo> FilesystemOps::MakeDir(const std::string& path, const os::UserInfo& owner) const {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      return AlreadyExistsError(fmt::format("directory '{}' already exists", path));
    }
    return InvalidArgumentError(
        fmt::format("path '{}' already exists and is not a directory", path));
  }
  bool created = false;
  RETURN_IF_ERROR(MakeDirs(path, owner, &created));
  if (!created) return AlreadyExistsError(fmt::format("directory '{}' already exists", path));
  return Stat(path);
}

Result<EntryInfo> FilesystemOps::Move(const std::string& source, const std::string& destination,
                                      const os::UserInfo& owner) const {
  struct stat st;
  if (lstat(source.c_str(), &st) != 0) return PathError(source, errno);
  RETURN_IF_ERROR(MakeParents(destination, owner));
  if (rename(source.c_str(), destination.c_str()) != 0) {
    return ErrnoError(fmt::format("move '{}' to '{}'", source, destination), errno);
  }
  return Stat(destination);
}

Result<std::vector<EntryInfo>> FilesystemOps::ListDir(const std::string& path,
                                                      uint32_t depth) const {
  if (depth == 0) depth = 1;
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return PathError(path, errno);
  if (!S_ISDIR(st.st_mode)) {
    return InvalidArgumentError(fmt::format("path '{}' is not a directory", path));
  }
  std::vector<EntryInfo> out;
  NameCache names;
  std::function<Status(const std::string&, uint32_t)> walk = [&](const std::string& dir,
                                                                 uint32_t level) -> Status {
    auto children = ReadNames(dir);
    if (!children.ok()) {
      // The root must be readable; a subdirectory that vanished or is unreadable is skipped.
      return level == 1 ? children.status() : Status::Ok();
    }
    for (const auto& name : *children) {
      std::string child = dir == "/" ? "/" + name : dir + "/" + name;
      auto entry = MakeEntry(child, names);
      if (!entry.ok()) continue;  // vanished during the walk
      out.push_back(*entry);
      struct stat cst;
      if (level < depth && lstat(child.c_str(), &cst) == 0 && S_ISDIR(cst.st_mode)) {
        RETURN_IF_ERROR(walk(child, level + 1));
      }
    }
    return Status::Ok();
  };
  RETURN_IF_ERROR(walk(path, 1));
  return out;
}

Status FilesystemOps::Remove(const std::string& path) const {
  if (path == "/") return InvalidArgumentError("refusing to remove '/'");
  base::UniqueFd parent(open(DirName(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();
    return ErrnoError(fmt::format("remove '{}'", path), errno);
  }
  return RemoveAt(parent.get(), BaseName(path).c_str())
      .WithPrefix(fmt::format("remove '{}'", path));
}

std::map<std::string, std::string> FilesystemOps::GetMetadata(const std::string& path) {
  std::map<std::string, std::string> out;
  char names[8192];
  ssize_t n = llistxattr(path.c_str(), names, sizeof names);
  if (n <= 0) return out;
  for (ssize_t off = 0; off < n;) {
    std::string name(names + off);
    off += static_cast<ssize_t>(name.size()) + 1;
    if (name.rfind(kXattrPrefix, 0) != 0) continue;
    char value[4096];
    ssize_t len = lgetxattr(path.c_str(), name.c_str(), value, sizeof value);
    if (len >= 0)
      out[name.substr(kXattrPrefix.size())] = std::string(value, static_cast<size_t>(len));
  }
  return out;
}

Status FilesystemOps::SetMetadata(int fd, const std::map<std::string, std::string>& metadata) {
  // Replace: drop every user.e2b.* attribute first.
  char names[8192];
  ssize_t n = flistxattr(fd, names, sizeof names);
  for (ssize_t off = 0; n > 0 && off < n;) {
    std::string name(names + off);
    off += static_cast<ssize_t>(name.size()) + 1;
    if (name.rfind(kXattrPrefix, 0) == 0) fremovexattr(fd, name.c_str());
  }
  for (const auto& [k, v] : metadata) {
    std::string name = fmt::format("{}{}", kXattrPrefix, k);
    if (fsetxattr(fd, name.c_str(), v.data(), v.size(), 0) != 0) {
      return ErrnoError(fmt::format("set metadata '{}'", k), errno);
    }
  }
  return Status::Ok();
}

}  // namespace warren::envd
