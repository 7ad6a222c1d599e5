#include "base/small_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>

#include "base/ids.h"
#include "base/unique_fd.h"

namespace warren::base {

Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes) {
  UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(fmt::format("read {}", path), errno);
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      return OutOfRangeError(fmt::format("{} is larger than {} bytes", path, max_bytes));
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Status WriteKernelFile(const std::string& path, std::string_view data) {
  UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  for (;;) {
    ssize_t n = write(fd.get(), data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("write '{}' to {}", data, path), errno);
    if (static_cast<size_t>(n) != data.size()) {
      return InternalError(fmt::format("short write of '{}' to {}", data, path));
    }
    return Status::Ok();
  }
}

Status WriteFileAtomically(const std::string& path, std::string_view data, bool durable,
                           mode_t mode) {
  return WriteFileAtomically(path, data, AtomicWrite{.durable = durable, .mode = mode});
}

Status WriteFileAtomically(const std::string& path, std::string_view data, const AtomicWrite& how) {
  std::string tmp =
      how.unique_temp ? fmt::format("{}.{}.tmp", path, RandomAlnum(12)) : path + ".tmp";
  UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, how.mode));
  if (!fd) return ErrnoError(fmt::format("create {}", tmp), errno);
  auto fail = [&](std::string_view what) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("{} {}", what, tmp), err);
  };
  // A temp file left by a crash keeps its old mode through O_TRUNC.
  if (fchmod(fd.get(), how.mode) != 0) return fail("chmod");
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = write(fd.get(), data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("write");
    done += static_cast<size_t>(n);
  }
  if ((how.owner_uid != static_cast<uid_t>(-1) || how.owner_gid != static_cast<gid_t>(-1)) &&
      fchown(fd.get(), how.owner_uid, how.owner_gid) != 0) {
    return fail("chown");
  }
  if (how.durable && fsync(fd.get()) != 0) return fail("fsync");
  fd.reset();
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    unlink(tmp.c_str());
    return ErrnoError(fmt::format("rename {} to {}", tmp, path), err);
  }
  return Status::Ok();
}

bool AppendStartingOverPast(int fd, std::string_view line, uint64_t max_bytes) {
  struct stat st {};
  if (fstat(fd, &st) == 0 && static_cast<uint64_t>(st.st_size) + line.size() > max_bytes) {
    if (ftruncate(fd, 0) != 0) return false;
  }
  return write(fd, line.data(), line.size()) == static_cast<ssize_t>(line.size());
}

}  // namespace warren::base
