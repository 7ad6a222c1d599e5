#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::image {

// An exclusive flock(2) on a lock file, held until destruction. Each FileLock opens the file
// itself, so two FileLocks on one path exclude each other across threads and across processes.
// With `remove_on_release`, the holder unlinks the file before unlocking and a waiter that got
// the lock on the unlinked inode retries on the new one: lock files then never accumulate.
// Move-only; not thread-safe (one owner).
class FileLock {
 public:
  FileLock() = default;
  FileLock(FileLock&&) noexcept = default;
  FileLock& operator=(FileLock&& other) noexcept;
  ~FileLock();

  // Blocks until the lock is held.
  static Result<FileLock> Acquire(const std::string& path, bool remove_on_release = false);
  // Returns Unavailable at once when another holder has it.
  static Result<FileLock> TryAcquire(const std::string& path, bool remove_on_release = false);

  bool held() const { return fd_.valid(); }
  void Release();

 private:
  static Result<FileLock> Lock(const std::string& path, bool remove_on_release, bool wait);
  std::string path_;
  base::UniqueFd fd_;
  bool remove_on_release_ = false;
};

}  // namespace warren::image
