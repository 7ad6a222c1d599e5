#include "image/safe_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <limits.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "base/ids.h"
#include "base/scope_guard.h"

namespace warren::image {
namespace {

int OpenAt2(int dir_fd, const char* path, uint64_t flags, uint64_t resolve) {
  struct open_how how = {};
  how.flags = flags;
  how.resolve = resolve;
  int fd;
  do {
    fd = static_cast<int>(syscall(SYS_openat2, dir_fd, path, &how, sizeof(how)));
  } while (fd < 0 && errno == EAGAIN);  // RESOLVE_BENEATH retries after a concurrent rename.
  return fd;
}

constexpr uint64_t kResolveStrict =
    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV;

std::string JoinComponents(const std::vector<std::string>& components, size_t count) {
  std::string out;
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out.push_back('/');
    out += components[i];
  }
  return out;
}

Status OpenError(std::string_view path, int err) {
  if (err == ELOOP) {
    return InvalidArgumentError(
        fmt::format("path '{}' passes through a symlink", PrintablePath(path)));
  }
  if (err == ENOTDIR) {
    return InvalidArgumentError(
        fmt::format("path '{}' passes through a non-directory", PrintablePath(path)));
  }
  if (err == EXDEV) {
    return InvalidArgumentError(
        fmt::format("path '{}' leaves the directory tree", PrintablePath(path)));
  }
  return ErrnoError(fmt::format("opening '{}'", PrintablePath(path)), err);
}

Status RemoveChildren(int fd, dev_t dev, const std::string& where);

Status RemoveTreeImpl(int dir_fd, const std::string& name, dev_t parent_dev,
                      const std::string& where) {
  struct stat st;
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(fmt::format("stat '{}'", where), errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (unlinkat(dir_fd, name.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoError(fmt::format("unlink '{}'", where), errno);
    }
    return Status::Ok();
  }
  if (st.st_dev != parent_dev) {
    return FailedPreconditionError(
        fmt::format("refusing to remove '{}': it is a mount point", where));
  }
  int raw = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (raw < 0 && errno == EACCES) {
    // A 0000 directory of ours: make it readable, then try again.
    if (fchmodat(dir_fd, name.c_str(), 0700, 0) == 0) {
      raw = openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
  }
  if (raw < 0) return ErrnoError(fmt::format("open '{}'", where), errno);
  base::UniqueFd fd(raw);
  // Writable so entries can be unlinked when we are the non-root owner; harmless for root.
  (void)fchmod(fd.get(), 0700);
  RETURN_IF_ERROR(RemoveChildren(fd.get(), st.st_dev, where));
  fd.reset();
  if (unlinkat(dir_fd, name.c_str(), AT_REMOVEDIR) != 0 && errno != ENOENT) {
    return ErrnoError(fmt::format("rmdir '{}'", where), errno);
  }
  return Status::Ok();
}

Status RemoveChildren(int fd, dev_t dev, const std::string& where) {
  int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) return ErrnoError("dup", errno);
  DIR* dir = fdopendir(dup_fd);
  if (dir == nullptr) {
    close(dup_fd);
    return ErrnoError(fmt::format("opendir '{}'", where), errno);
  }
  auto close_dir = base::ScopeExit([dir] { closedir(dir); });
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    struct dirent* de = readdir(dir);
    if (de == nullptr) {
      if (errno != 0) return ErrnoError(fmt::format("readdir '{}'", where), errno);
      break;
    }
    std::string_view n = de->d_name;
    if (n == "." || n == "..") continue;
    names.emplace_back(n);
  }
  for (const auto& n : names) {
    RETURN_IF_ERROR(RemoveTreeImpl(fd, n, dev, where + "/" + n));
  }
  return Status::Ok();
}

}  // namespace

std::string PrintablePath(std::string_view path) {
  constexpr size_t kMax = 200;
  std::string out;
  for (size_t i = 0; i < path.size() && i < kMax; ++i) {
    unsigned char c = static_cast<unsigned char>(path[i]);
    if (c < 0x20 || c == 0x7f || c == '\\') {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (path.size() > kMax) out += "...";
  return out;
}

Result<std::vector<std::string>> SplitEntryPath(std::string_view path) {
  if (path.empty()) return InvalidArgumentError("entry has an empty path");
  if (path.size() >= PATH_MAX) {
    return InvalidArgumentError(
        fmt::format("entry path '{}' is longer than {} bytes", PrintablePath(path), PATH_MAX));
  }
  if (path.front() == '/') {
    return InvalidArgumentError(fmt::format("entry path '{}' is absolute", PrintablePath(path)));
  }
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    start = end + 1;
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      return InvalidArgumentError(
          fmt::format("entry path '{}' contains '..'", PrintablePath(path)));
    }
    if (part.size() > NAME_MAX) {
      return InvalidArgumentError(fmt::format("entry path '{}' has a component over {} bytes",
                                              PrintablePath(path), NAME_MAX));
    }
    if (part.find('\0') != std::string_view::npos) {
      return InvalidArgumentError(
          fmt::format("entry path '{}' contains a NUL byte", PrintablePath(path)));
    }
    out.emplace_back(part);
  }
  return out;
}

Result<base::UniqueFd> OpenDirBeneath(int root_fd, const std::vector<std::string>& components,
                                      size_t count, bool create, mode_t create_mode) {
  constexpr uint64_t kFlags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  if (count == 0) {
    int fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
    if (fd < 0) return ErrnoError("dup", errno);
    return base::UniqueFd(fd);
  }
  // Fast path: the whole directory exists; one kernel walk checks every component.
  std::string joined = JoinComponents(components, count);
  int fd = OpenAt2(root_fd, joined.c_str(), kFlags, kResolveStrict);
  if (fd >= 0) return base::UniqueFd(fd);
  if (errno != ENOENT || !create) return OpenError(joined, errno);

  // Slow path: walk one component at a time, making what is missing.
  base::UniqueFd current(fcntl(root_fd, F_DUPFD_CLOEXEC, 0));
  if (!current.valid()) return ErrnoError("dup", errno);
  for (size_t i = 0; i < count; ++i) {
    const std::string& part = components[i];
    int next = OpenAt2(current.get(), part.c_str(), kFlags, kResolveStrict);
    if (next < 0 && errno == ENOENT) {
      if (mkdirat(current.get(), part.c_str(), create_mode) != 0 && errno != EEXIST) {
        return ErrnoError(
            fmt::format("mkdir '{}'", PrintablePath(JoinComponents(components, i + 1))), errno);
      }
      next = OpenAt2(current.get(), part.c_str(), kFlags, kResolveStrict);
    }
    if (next < 0) return OpenError(JoinComponents(components, i + 1), errno);
    current = base::UniqueFd(next);
  }
  return current;
}

Status RemoveTreeAt(int dir_fd, const std::string& name) {
  struct stat st;
  if (fstat(dir_fd, &st) != 0) return ErrnoError("stat directory", errno);
  return RemoveTreeImpl(dir_fd, name, st.st_dev, name);
}

Status RemoveTree(const std::string& path) {
  std::filesystem::path p(path);
  std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
  std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..") {
    return InvalidArgumentError(fmt::format("cannot remove '{}'", path));
  }
  int raw = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (raw < 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(fmt::format("open '{}'", parent), errno);
  }
  base::UniqueFd fd(raw);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError("stat", errno);
  return RemoveTreeImpl(fd.get(), name, st.st_dev, path);
}

Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view data,
                       bool durable) {
  // Unique per writer, so concurrent writers of one name never share a temporary file.
  std::string tmp = fmt::format("{}/.{}.{}.tmp", dir, name, base::RandomHex(8));
  int raw = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (raw < 0) return ErrnoError(fmt::format("create '{}'", tmp), errno);
  base::UniqueFd fd(raw);
  auto remove_tmp = base::ScopeExit([&] { unlink(tmp.c_str()); });
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(fmt::format("write '{}'", tmp), errno);
    }
    done += static_cast<size_t>(n);
  }
  if (durable && fsync(fd.get()) != 0) return ErrnoError(fmt::format("fsync '{}'", tmp), errno);
  fd.reset();
  std::string final_path = dir + "/" + name;
  if (rename(tmp.c_str(), final_path.c_str()) != 0) {
    return ErrnoError(fmt::format("rename to '{}'", final_path), errno);
  }
  remove_tmp.Dismiss();
  if (!durable) return Status::Ok();
  base::UniqueFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.valid()) (void)fsync(dir_fd.get());
  return Status::Ok();
}

Result<std::string> ReadFileLimited(int dir_fd, const std::string& name, size_t max_size) {
  int raw = openat(dir_fd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (raw < 0) return ErrnoError(fmt::format("open '{}'", PrintablePath(name)), errno);
  base::UniqueFd fd(raw);
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return ErrnoError("stat", errno);
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(fmt::format("'{}' is not a regular file", PrintablePath(name)));
  }
  if (static_cast<uint64_t>(st.st_size) > max_size) {
    return ResourceExhaustedError(fmt::format("'{}' is {} bytes, over the limit of {}",
                                              PrintablePath(name), st.st_size, max_size));
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = read(fd.get(), out.data() + done, out.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(fmt::format("read '{}'", PrintablePath(name)), errno);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

uint64_t TreeBytes(const std::string& path) {
  std::error_code ec;
  uint64_t total = 0;
  auto it = std::filesystem::recursive_directory_iterator(
      path, std::filesystem::directory_options::skip_permission_denied, ec);
  for (; !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec) && !it->is_symlink(ec)) total += it->file_size(ec);
  }
  return total;
}

}  // namespace warren::image
