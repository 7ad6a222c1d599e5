#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::base {

// Whole-file helpers for small kernel and state files (/proc, /sys/fs/cgroup, state records).
// Errors name the path; errno decides the code (ENOENT → NotFound, ...). Thread-safe.

// Reads at most `max_bytes` (a larger file is OutOfRange, so a hostile file cannot exhaust
// memory). Retries EINTR; reads until EOF, as procfs files may return short reads.
Result<std::string> ReadSmallFile(const std::string& path, size_t max_bytes = 1 << 20);

// Writes `data` with one write(2) to an existing file (open O_WRONLY, no O_CREAT, no O_TRUNC):
// the form cgroupfs and procfs expect, where each write is one command.
Status WriteKernelFile(const std::string& path, std::string_view data);

// Replaces `path` atomically: writes `path.tmp` (with `mode` from its creation on), fsyncs it
// when `durable`, renames over `path`.
Status WriteFileAtomically(const std::string& path, std::string_view data, bool durable = false,
                           mode_t mode = 0644);

// The same, with more said about the file.
struct AtomicWrite {
  bool durable = false;
  mode_t mode = 0644;
  // The file's owner before it takes `path`'s place (root writing for another user, e.g. a
  // sandbox's root); -1 keeps the writer's.
  uid_t owner_uid = static_cast<uid_t>(-1);
  gid_t owner_gid = static_cast<gid_t>(-1);
  // The temporary file gets a random name beside `path` instead of `path.tmp`, for writers of
  // the same path that do not coordinate.
  bool unique_temp = false;
};
Status WriteFileAtomically(const std::string& path, std::string_view data, const AtomicWrite& how);

// Appends `line` to `fd` (opened O_APPEND), first emptying the file when the line would take it
// past `max_bytes`: for logs another process collects as they grow and that must stay bounded
// (the reader notices the file shrank and reads it from its start). Best effort: false when the
// file could not be emptied or written. Callers serialize their appends.
bool AppendStartingOverPast(int fd, std::string_view line, uint64_t max_bytes);

}  // namespace warren::base
