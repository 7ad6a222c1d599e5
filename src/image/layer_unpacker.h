#pragma once

#include <unistd.h>

#include <cstdint>
#include <string_view>

#include "base/result.h"
#include "image/digest.h"

struct archive;

namespace warren::image {

// Bounds on what one layer may write, so a hostile or corrupt layer (a decompression bomb, a
// million empty files) fails cleanly instead of filling the disk.
struct UnpackLimits {
  uint64_t max_entries = 4'000'000;
  uint64_t max_bytes = uint64_t{64} << 30;  // regular-file bytes after decompression
};

struct UnpackOptions {
  // Keep numeric uid/gid and security.capability from the archive. Needs root (CAP_CHOWN,
  // CAP_SETFCAP); without it files belong to the caller, like GNU tar run by a user. Defaults
  // to whether the process is root.
  bool same_owner = geteuid() == 0;
  UnpackLimits limits;
};

// What an unpack wrote; printed in logs and by the bench.
struct UnpackStats {
  uint64_t entries = 0;
  uint64_t files = 0;
  uint64_t dirs = 0;
  uint64_t symlinks = 0;
  uint64_t hardlinks = 0;
  uint64_t devices = 0;  // char, block and fifo nodes
  uint64_t whiteouts = 0;
  uint64_t opaque_dirs = 0;
  uint64_t xattrs_dropped = 0;  // attributes outside the allowlist (see layer_unpacker.cc)
  uint64_t bytes = 0;           // regular-file bytes written
};

// Unpacks the tar stream of `ar` (opened for reading by the caller; any compression filter) into
// the empty directory `root_fd`, as an overlayfs lower directory:
//  - every path is resolved beneath root_fd without following symlinks (openat2 with
//    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS); absolute paths, "..", paths through a symlink or a
//    file, and hardlinks to anything outside the layer are rejected;
//  - ".wh.NAME" becomes a 0/0 character device NAME, ".wh..wh..opq" sets
//    trusted.overlay.opaque=y on its directory (needs CAP_SYS_ADMIN);
//  - ownership, modes (setuid included), device nodes, user.* and security.capability xattrs and
//    timestamps are kept; directory modes and times are applied last.
// On error the directory is left partly filled: the caller owns it and removes it. The archive
// is read to its end-of-archive marker only. Not thread-safe per archive; independent calls may
// run in parallel.
Result<UnpackStats> UnpackTar(struct archive* ar, int root_fd, const UnpackOptions& options);

// A layer blob's identity as the manifest states it.
struct BlobExpectation {
  Digest digest;
  int64_t size = -1;  // -1: unknown
};

// Reads a layer blob (plain, gzip or zstd tar) from `blob_fd`, unpacks it into `root_fd` and
// checks that the bytes read hash to `expect.digest` and number `expect.size`. A mismatch is
// DataLoss naming both digests; the caller then discards the directory.
Result<UnpackStats> UnpackLayerBlob(int blob_fd, const BlobExpectation& expect, int root_fd,
                                    const UnpackOptions& options);

// Unpacks a layer held in memory (tests, the fuzzer); no digest check.
Result<UnpackStats> UnpackLayerBytes(std::string_view bytes, int root_fd,
                                     const UnpackOptions& options);

}  // namespace warren::image
