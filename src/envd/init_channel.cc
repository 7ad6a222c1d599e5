#include "envd/init_channel.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/ids.h"
#include "base/small_file.h"
#include "base/unique_fd.h"
#include "fmt/format.h"

namespace warren::envd {
namespace {

constexpr size_t kMaxBody = 1024 * 1024;  // as POST /init's

std::string PathIn(const std::string& dir, std::string_view name) {
  return fmt::format("{}/{}", dir, name);
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(fmt::format("write {}", path), errno);
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

Status NewGeneration(const std::string& dir) {
  const std::string path = PathIn(dir, kInitChannelGeneration);
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  uint64_t value = 0;
  base::RandomBytes(&value, sizeof value);
  ssize_t n = pwrite(fd.get(), &value, sizeof value, 0);
  if (n != static_cast<ssize_t>(sizeof value)) {
    return ErrnoError(fmt::format("write {}", path), n < 0 ? errno : EIO);
  }
  return Status::Ok();
}

}  // namespace

Status CreateInitChannel(const std::string& dir, uid_t owner) {
  const bool made = mkdir(dir.c_str(), 0700) == 0;
  if (!made && errno != EEXIST) return ErrnoError(fmt::format("mkdir {}", dir), errno);
  if (chown(dir.c_str(), owner, owner) != 0) return ErrnoError(fmt::format("chown {}", dir), errno);
  // A new one has its mode from mkdir (the umask only clears bits 0700 does not have).
  if (!made && chmod(dir.c_str(), 0700) != 0) {
    return ErrnoError(fmt::format("chmod {}", dir), errno);
  }
  const std::string path = PathIn(dir, kInitChannelGeneration);
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) {
    if (errno == EEXIST) return Status::Ok();
    return ErrnoError(fmt::format("create {}", path), errno);
  }
  uint64_t value = 0;
  base::RandomBytes(&value, sizeof value);
  RETURN_IF_ERROR(WriteAll(fd.get(), {reinterpret_cast<const char*>(&value), sizeof value}, path));
  if (fchown(fd.get(), owner, owner) != 0) return ErrnoError(fmt::format("chown {}", path), errno);
  return Status::Ok();
}

Status WriteInitChannel(const std::string& dir, std::string_view json, uid_t owner) {
  const std::string body = PathIn(dir, kInitChannelBody);
  if (json.empty()) {
    if (unlink(body.c_str()) != 0 && errno != ENOENT) {
      return ErrnoError(fmt::format("remove {}", body), errno);
    }
    return NewGeneration(dir);
  }
  // A name of its own per write: writers do not coordinate.
  const std::string tmp = PathIn(dir, fmt::format(".init.{}.tmp", base::RandomAlnum(12)));
  base::UniqueFd fd(open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError(fmt::format("create {}", tmp), errno);
  Status written = WriteAll(fd.get(), json, tmp);
  if (written.ok() && fchown(fd.get(), owner, owner) != 0) {
    written = ErrnoError(fmt::format("chown {}", tmp), errno);
  }
  fd.reset();
  if (written.ok() && rename(tmp.c_str(), body.c_str()) != 0) {
    written = ErrnoError(fmt::format("rename {} to {}", tmp, body), errno);
  }
  if (!written.ok()) {
    unlink(tmp.c_str());
    return written;
  }
  return NewGeneration(dir);
}

Result<std::unique_ptr<InitChannelReader>> InitChannelReader::Open(const std::string& dir) {
  const std::string path = PathIn(dir, kInitChannelGeneration);
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  struct stat st {};
  if (fstat(fd.get(), &st) != 0) return ErrnoError(fmt::format("stat {}", path), errno);
  if (!S_ISREG(st.st_mode) || st.st_size < static_cast<off_t>(sizeof(uint64_t))) {
    return FailedPreconditionError(
        fmt::format("{} is not an init channel's generation (a regular file of 8 bytes)", path));
  }
  void* map = mmap(nullptr, sizeof(uint64_t), PROT_READ, MAP_SHARED, fd.get(), 0);
  if (map == MAP_FAILED) return ErrnoError(fmt::format("mmap {}", path), errno);
  return std::make_unique<InitChannelReader>(dir, map, sizeof(uint64_t));
}

InitChannelReader::~InitChannelReader() { munmap(map_, map_bytes_); }

uint64_t InitChannelReader::Generation() const {
  // The node rewrites it with pwrite(2), so a load may see it half written: that value differs
  // from the one seen before too, and costs a read of the body, no more.
  return __atomic_load_n(static_cast<const uint64_t*>(map_), __ATOMIC_ACQUIRE);
}

bool InitChannelReader::Changed() const { return !seen_ || *seen_ != Generation(); }

Result<std::optional<InitRequest>> InitChannelReader::Take() {
  seen_ = Generation();  // before the body: a later write changes it again
  auto body = base::ReadSmallFile(PathIn(dir_, kInitChannelBody), kMaxBody);
  if (!body.ok()) {
    if (body.status().code() == StatusCode::kNotFound) return std::optional<InitRequest>();
    return body.status();
  }
  ASSIGN_OR_RETURN(InitRequest init, ParseInitRequest(*body));
  return std::optional<InitRequest>(std::move(init));
}

}  // namespace warren::envd
