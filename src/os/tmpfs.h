#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::os {

// What EnsureMemoryBackedDir did to a directory.
struct MemoryBackedDir {
  enum class Action {
    kAlready,     // it was on a tmpfs (or ramfs) already: nothing done
    kMounted,     // it was on a disk filesystem and empty: a tmpfs is mounted on it now
    kLeftOnDisk,  // on a disk filesystem but not empty: left as it is (see `why`)
  };
  Action action = Action::kAlready;
  std::string fs;   // the filesystem it was on ("ext4", "tmpfs", ...)
  std::string why;  // for kLeftOnDisk
};

// Makes `dir` (created with `mode` if missing) live in memory: when it is on a disk filesystem
// and empty, a tmpfs with `tmpfs_options` ("mode=0711,size=256m") is mounted on it. A directory
// that already holds entries is left alone (its files would be hidden under the mount). Two
// callers racing on one directory mount one tmpfs between them (a lock on the directory). The
// mount is never undone here: it belongs to the host, as a tmpfs /run does.
Result<MemoryBackedDir> EnsureMemoryBackedDir(const std::string& dir, unsigned mode,
                                              std::string_view tmpfs_options);

// Makes `dir` (created with `mode` if missing) the root of a tmpfs of its own, mounted with
// `tmpfs_options`, unless a tmpfs is mounted there already (it keeps the options its mounter
// gave). Unlike EnsureMemoryBackedDir this mounts over a directory that is in memory already:
// the options (huge=within_size) are the point. Returns whether it mounted. A directory that
// holds entries and is no mount point is refused (FailedPrecondition naming an entry); racing
// callers mount one tmpfs between them. Never unmounted here.
Result<bool> EnsureOwnTmpfs(const std::string& dir, unsigned mode, std::string_view tmpfs_options);

}  // namespace warren::os
