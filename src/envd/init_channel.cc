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

// A fresh random value at the start of the generation file `fd` (opened for writing).
Status WriteGeneration(int fd, const std::string& path) {
  uint64_t value = 0;
  base::RandomBytes(&value, sizeof value);
  ssize_t n = pwrite(fd, &value, sizeof value, 0);
  if (n != static_cast<ssize_t>(sizeof value)) {
    return ErrnoError(fmt::format("write {}", path), n < 0 ? errno : EIO);
  }
  return Status::Ok();
}

Status NewGeneration(const std::string& dir) {
  const std::string path = PathIn(dir, kInitChannelGeneration);
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  return WriteGeneration(fd.get(), path);
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
  RETURN_IF_ERROR(WriteGeneration(fd.get(), path));
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
  // A temporary name of its own per write: writers do not coordinate.
  RETURN_IF_ERROR(base::WriteFileAtomically(
      body, json,
      base::AtomicWrite{
          .mode = 0600, .owner_uid = owner, .owner_gid = owner, .unique_temp = true}));
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
