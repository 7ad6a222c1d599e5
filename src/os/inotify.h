#pragma once

#include <sys/inotify.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// One event read from an inotify descriptor.
struct InotifyEvent {
  int wd = -1;
  uint32_t mask = 0;
  uint32_t cookie = 0;
  std::string name;  // entry name inside the watched directory; empty for the directory itself
};

// An inotify instance (non-blocking, close-on-exec). Move-only; not thread-safe: one owner reads
// and adds watches.
class Inotify {
 public:
  static Result<Inotify> Create();

  // Adds (or updates) a watch; returns the watch descriptor.
  Result<int> AddWatch(const std::string& path, uint32_t mask);
  void RemoveWatch(int wd);

  // Reads whatever events are queued now (empty when none). Unavailable on a read error.
  Result<std::vector<InotifyEvent>> ReadEvents();

  int fd() const { return fd_.get(); }

 private:
  explicit Inotify(base::UniqueFd fd) : fd_(std::move(fd)) {}
  base::UniqueFd fd_;
};

// Splits a buffer of raw `struct inotify_event` records, stopping at a truncated record.
// Exposed for tests and fuzzing.
std::vector<InotifyEvent> ParseInotifyBuffer(const char* data, size_t len);

}  // namespace warren::os
