#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace warren::runtime::native {

// Walking directory trees a sandbox wrote (its writable layer). The sandbox controls their
// content, so symlinks are never followed (everything is *at() relative to a directory fd
// opened with O_NOFOLLOW), and depth is not trusted: RemoveTree flattens very deep trees by
// moving deep subdirectories up instead of recursing, so neither the stack nor the fd table
// can be exhausted. Thread-compatible.

// Removes `path` and everything below it. A missing path is not an error.
Status RemoveTree(const std::string& path);

// Bytes allocated (st_blocks * 512) by `path` and everything below it, without following
// symlinks; hard links are counted once per name. Stops descending below 256 levels.
Result<uint64_t> DiskUsage(const std::string& path);

}  // namespace warren::runtime::native
