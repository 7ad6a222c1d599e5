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

// Appends `line` to `fd` (opened O_APPEND), first emptying the file when the line would take it
// past `max_bytes`: for logs another process collects as they grow and that must stay bounded
// (the reader notices the file shrank and reads it from its start). Best effort: false when the
// file could not be emptied or written. Callers serialize their appends.
bool AppendStartingOverPast(int fd, std::string_view line, uint64_t max_bytes);

}  // namespace warren::base
