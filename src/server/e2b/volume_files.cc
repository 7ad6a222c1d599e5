#include "server/e2b/volume_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/ids.h"
#include "image/safe_fs.h"

namespace warren::server::e2b {
namespace {

// Ids a user-namespaced sandbox has (its map's size).
constexpr uint32_t kSandboxIds = 65536;
constexpr uint32_t kOverflowId = 65534;

Status Errno(const std::string& what, int err) {
  switch (err) {
    case ENOENT:
      return NotFoundError(fmt::format("{}: no such file or directory", what));
    case EEXIST:
      return AlreadyExistsError(fmt::format("{}: already exists", what));
    case ELOOP:
      return InvalidArgumentError(fmt::format("{}: is a symlink", what));
    case ENOTDIR:
      return InvalidArgumentError(fmt::format("{}: not a directory on the way", what));
    case EISDIR:
      return FailedPreconditionError(fmt::format("{}: is a directory", what));
    case EDQUOT:
    case ENOSPC:
      return ResourceExhaustedError(fmt::format("{}: the volume is full (its size limit)", what));
    case EXDEV:
      return InvalidArgumentError(fmt::format("{}: crosses into another file system", what));
    default:
      return InternalError(fmt::format("{}: {}", what, strerror(err)));
  }
}

base::WallTime WallOf(const timespec& ts) {
  return base::WallTime(std::chrono::duration_cast<base::WallTime::duration>(
      std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

// "" and "/" → {}; else the components, refusing ".." and empties (image::SplitEntryPath).
Result<std::vector<std::string>> Components(std::string_view path) {
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  if (path.empty()) return std::vector<std::string>{};
  auto parts = image::SplitEntryPath(path);
  if (!parts.ok()) {
    return InvalidArgumentError(
        fmt::format("path \"{}\" is not a path inside the volume", image::PrintablePath(path)));
  }
  return parts;
}

// A directory entry `name` (one component) of `dir`, opened without following it.
Result<base::UniqueFd> OpenChild(int dir, const std::string& name, int flags,
                                 const std::string& what) {
  int fd = openat(dir, name.c_str(), flags | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) return Errno(what, errno);
  return base::UniqueFd(fd);
}

Status Own(int fd, uint32_t uid, uint32_t gid, const std::string& what) {
  if (fchown(fd, uid, gid) != 0) return Errno(what, errno);
  return Status::Ok();
}

}  // namespace

Result<VolumeFiles> VolumeFiles::Open(const std::string& root, uint32_t id_offset) {
  int fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return Errno("the volume's directory", errno);
  return VolumeFiles(base::UniqueFd(fd), id_offset);
}

uint32_t VolumeFiles::SandboxId(uint32_t host) const {
  if (id_offset_ == 0) return host;
  return host >= id_offset_ && host - id_offset_ < kSandboxIds ? host - id_offset_ : kOverflowId;
}

Result<VolumeFiles::Located> VolumeFiles::Locate(std::string_view path, bool create_parents,
                                                 const VolumeOwner& owner) const {
  ASSIGN_OR_RETURN(std::vector<std::string> parts, Components(path));
  Located at;
  int dup_fd = fcntl(root_.get(), F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return Errno("the volume's directory", errno);
  at.parent = base::UniqueFd(dup_fd);
  at.path = "/";
  if (parts.empty()) return at;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += "/" + parts[i];
    auto next = OpenChild(at.parent.get(), parts[i], O_RDONLY | O_DIRECTORY, walked);
    if (!next.ok() && next.status().code() == StatusCode::kNotFound && create_parents) {
      if (mkdirat(at.parent.get(), parts[i].c_str(), owner.mode.value_or(0755)) != 0 &&
          errno != EEXIST) {
        return Errno(walked, errno);
      }
      next = OpenChild(at.parent.get(), parts[i], O_RDONLY | O_DIRECTORY, walked);
      if (next.ok()) {
        RETURN_IF_ERROR(
            Own(next->get(), HostId(owner.uid.value_or(0)), HostId(owner.gid.value_or(0)), walked));
      }
    }
    if (!next.ok()) return next.status();
    at.parent = std::move(*next);
  }
  at.name = parts.back();
  at.path = walked + "/" + at.name;
  return at;
}

Result<VolumeEntry> VolumeFiles::StatAt(const Located& at) const {
  struct stat st;
  const char* name = at.name.empty() ? "" : at.name.c_str();
  const int flags = at.name.empty() ? AT_EMPTY_PATH : AT_SYMLINK_NOFOLLOW;
  if (fstatat(at.parent.get(), name, &st, flags) != 0) return Errno(at.path, errno);
  VolumeEntry e;
  e.name = at.name;
  e.path = at.path;
  e.type = S_ISREG(st.st_mode)   ? "file"
           : S_ISDIR(st.st_mode) ? "directory"
           : S_ISLNK(st.st_mode) ? "symlink"
                                 : "unknown";
  if (S_ISLNK(st.st_mode)) {
    char buf[4096];
    ssize_t n = readlinkat(at.parent.get(), name, buf, sizeof buf);
    if (n > 0) e.target.assign(buf, static_cast<size_t>(n));
  }
  e.size = st.st_size;
  e.mode = st.st_mode & 07777;
  e.uid = SandboxId(st.st_uid);
  e.gid = SandboxId(st.st_gid);
  e.atime = WallOf(st.st_atim);
  e.mtime = WallOf(st.st_mtim);
  e.ctime = WallOf(st.st_ctim);
  return e;
}

Result<VolumeEntry> VolumeFiles::Stat(std::string_view path) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, false, {}));
  return StatAt(at);
}

Result<std::vector<VolumeEntry>> VolumeFiles::List(std::string_view path, int depth) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, false, {}));
  base::UniqueFd dir;
  if (at.name.empty()) {
    dir = std::move(at.parent);
  } else {
    ASSIGN_OR_RETURN(dir, OpenChild(at.parent.get(), at.name, O_RDONLY | O_DIRECTORY, at.path));
  }
  std::vector<VolumeEntry> out;
  // (directory fd, its path) still to read, up to `depth` levels.
  struct Pending {
    base::UniqueFd fd;
    std::string path;
    int level;
  };
  std::vector<Pending> todo;
  todo.push_back({std::move(dir), at.name.empty() ? "" : at.path, 1});
  while (!todo.empty() && out.size() < kMaxListed) {
    Pending p = std::move(todo.back());
    todo.pop_back();
    // A new open of the directory, not a dup: a dup would share its read offset with every
    // other user of the fd (the root's is shared by every call on this object).
    int scan_fd = openat(p.fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (scan_fd < 0) return Errno(p.path, errno);
    DIR* d = fdopendir(scan_fd);
    if (d == nullptr) {
      close(scan_fd);
      return Errno(p.path, errno);
    }
    std::vector<std::string> names;
    while (dirent* ent = readdir(d)) {
      std::string n = ent->d_name;
      if (n != "." && n != "..") names.push_back(std::move(n));
    }
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      if (out.size() >= kMaxListed) break;
      Located child;
      int child_parent = fcntl(p.fd.get(), F_DUPFD_CLOEXEC, 0);
      if (child_parent < 0) return Errno(p.path, errno);
      child.parent = base::UniqueFd(child_parent);
      child.name = n;
      child.path = p.path + "/" + n;
      auto e = StatAt(child);
      if (!e.ok()) continue;  // gone meanwhile
      if (e->type == "directory" && p.level < depth) {
        auto sub = OpenChild(p.fd.get(), n, O_RDONLY | O_DIRECTORY, child.path);
        if (sub.ok()) todo.push_back({std::move(*sub), child.path, p.level + 1});
      }
      out.push_back(std::move(*e));
    }
  }
  std::sort(out.begin(), out.end(),
            [](const VolumeEntry& a, const VolumeEntry& b) { return a.path < b.path; });
  return out;
}

Result<VolumeEntry> VolumeFiles::MakeDir(std::string_view path, const VolumeOwner& owner,
                                         bool force) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, force, owner));
  if (at.name.empty()) return InvalidArgumentError("the volume's root exists already");
  if (mkdirat(at.parent.get(), at.name.c_str(), owner.mode.value_or(0755)) != 0) {
    if (!(errno == EEXIST && force)) return Errno(at.path, errno);
  } else {
    ASSIGN_OR_RETURN(base::UniqueFd fd,
                     OpenChild(at.parent.get(), at.name, O_RDONLY | O_DIRECTORY, at.path));
    RETURN_IF_ERROR(
        Own(fd.get(), HostId(owner.uid.value_or(0)), HostId(owner.gid.value_or(0)), at.path));
    if (owner.mode && fchmod(fd.get(), *owner.mode) != 0) return Errno(at.path, errno);
  }
  return StatAt(at);
}

Result<VolumeEntry> VolumeFiles::Write(std::string_view path, std::string_view data,
                                       const VolumeOwner& owner) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, true, owner));
  if (at.name.empty()) return FailedPreconditionError("/: is a directory");
  const std::string temp = ".warren-upload-" + base::RandomHex(8);
  ASSIGN_OR_RETURN(base::UniqueFd fd,
                   OpenChild(at.parent.get(), temp, O_WRONLY | O_CREAT | O_EXCL, at.path));
  auto fail = [&](Status s) {
    unlinkat(at.parent.get(), temp.c_str(), 0);
    return s;
  };
  if (Status s =
          Own(fd.get(), HostId(owner.uid.value_or(0)), HostId(owner.gid.value_or(0)), at.path);
      !s.ok()) {
    return fail(s);
  }
  if (fchmod(fd.get(), owner.mode.value_or(0644)) != 0) return fail(Errno(at.path, errno));
  for (size_t done = 0; done < data.size();) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(Errno(at.path, errno));
    }
    done += static_cast<size_t>(n);
  }
  if (fsync(fd.get()) != 0) return fail(Errno(at.path, errno));
  if (renameat(at.parent.get(), temp.c_str(), at.parent.get(), at.name.c_str()) != 0) {
    return fail(Errno(at.path, errno));
  }
  return StatAt(at);
}

Result<std::string> VolumeFiles::Read(std::string_view path, size_t max_bytes) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, false, {}));
  if (at.name.empty()) return FailedPreconditionError("/: is a directory");
  ASSIGN_OR_RETURN(base::UniqueFd fd,
                   OpenChild(at.parent.get(), at.name, O_RDONLY | O_NONBLOCK, at.path));
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return Errno(at.path, errno);
  if (S_ISDIR(st.st_mode)) return FailedPreconditionError(at.path + ": is a directory");
  if (!S_ISREG(st.st_mode)) return FailedPreconditionError(at.path + ": not a regular file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return ResourceExhaustedError(fmt::format("{}: {} bytes, above the {} this route returns",
                                              at.path, st.st_size, max_bytes));
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Errno(at.path, errno);
    if (n == 0) break;  // shrank meanwhile
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

Result<VolumeEntry> VolumeFiles::SetMetadata(std::string_view path,
                                             const VolumeOwner& owner) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, false, {}));
  base::UniqueFd fd;
  if (at.name.empty()) {
    int d = fcntl(root_.get(), F_DUPFD_CLOEXEC, 0);
    if (d < 0) return Errno("/", errno);
    fd = base::UniqueFd(d);
  } else {
    // A symlink's own metadata cannot be set (ELOOP, named); nothing is followed.
    ASSIGN_OR_RETURN(fd, OpenChild(at.parent.get(), at.name, O_RDONLY | O_NONBLOCK, at.path));
  }
  if (owner.uid || owner.gid) {
    struct stat st;
    if (fstat(fd.get(), &st) != 0) return Errno(at.path, errno);
    uint32_t uid = owner.uid ? HostId(*owner.uid) : st.st_uid;
    uint32_t gid = owner.gid ? HostId(*owner.gid) : st.st_gid;
    RETURN_IF_ERROR(Own(fd.get(), uid, gid, at.path));
  }
  if (owner.mode && fchmod(fd.get(), *owner.mode) != 0) return Errno(at.path, errno);
  return StatAt(at);
}

Status VolumeFiles::Remove(std::string_view path) const {
  ASSIGN_OR_RETURN(Located at, Locate(path, false, {}));
  if (at.name.empty()) return InvalidArgumentError("the volume's root cannot be removed");
  struct stat st;
  if (fstatat(at.parent.get(), at.name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return Errno(at.path, errno);
  }
  return image::RemoveTreeAt(at.parent.get(), at.name);
}

}  // namespace warren::server::e2b
