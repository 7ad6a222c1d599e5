#include "image/file_lock.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace warren::image {

FileLock& FileLock::operator=(FileLock&& other) noexcept {
  if (this != &other) {
    Release();
    path_ = std::move(other.path_);
    fd_ = std::move(other.fd_);
    remove_on_release_ = other.remove_on_release_;
  }
  return *this;
}

FileLock::~FileLock() { Release(); }

void FileLock::Release() {
  if (!fd_.valid()) return;
  if (remove_on_release_) unlink(path_.c_str());
  fd_.reset();  // Closing the last descriptor drops the flock.
}

Result<FileLock> FileLock::Acquire(const std::string& path, bool remove_on_release) {
  return Lock(path, remove_on_release, /*wait=*/true);
}

Result<FileLock> FileLock::TryAcquire(const std::string& path, bool remove_on_release) {
  return Lock(path, remove_on_release, /*wait=*/false);
}

Result<FileLock> FileLock::Lock(const std::string& path, bool remove_on_release, bool wait) {
  while (true) {
    int raw = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (raw < 0) return ErrnoError(fmt::format("open lock '{}'", path), errno);
    base::UniqueFd fd(raw);
    int r;
    do {
      r = flock(fd.get(), LOCK_EX | (wait ? 0 : LOCK_NB));
    } while (r != 0 && errno == EINTR);
    if (r != 0) {
      if (errno == EWOULDBLOCK) return UnavailableError(fmt::format("'{}' is locked", path));
      return ErrnoError(fmt::format("flock '{}'", path), errno);
    }
    // The previous holder may have unlinked the file while we waited: then our lock is on an
    // orphan inode and the next caller would lock a new file. Start over on the current one.
    struct stat held, current;
    if (fstat(fd.get(), &held) != 0) return ErrnoError("fstat lock", errno);
    if (stat(path.c_str(), &current) != 0 || held.st_ino != current.st_ino ||
        held.st_dev != current.st_dev) {
      continue;
    }
    FileLock lock;
    lock.path_ = path;
    lock.fd_ = std::move(fd);
    lock.remove_on_release_ = remove_on_release;
    return lock;
  }
}

}  // namespace warren::image
