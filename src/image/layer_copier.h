#pragma once

#include <cstdint>

#include "base/result.h"
#include "image/digest.h"
#include "image/layer_unpacker.h"

namespace warren::image {

struct CopyLayerOptions {
  // A user-namespaced sandbox's writable layer holds host ids (in-sandbox id + id_shift): they
  // are shifted back so the layer holds the ids the sandbox saw, as an unpacked image layer
  // does, and any sandbox can stack it. Ids outside [id_shift, id_shift + id_count) become
  // 65534 (the kernel's overflow id). id_count 0: no shift.
  uint32_t id_shift = 0;
  uint32_t id_count = 0;
  UnpackLimits limits;
};

struct CopiedLayer {
  // SHA-256 over a canonical walk of the tree (names sorted; type, mode, owner, mtime, size,
  // link target, device, kept xattrs and contents of each entry): equal trees, equal digest.
  Digest digest;
  uint64_t entries = 0;
  uint64_t bytes = 0;  // regular-file bytes copied
};

// Copies a sandbox's writable layer (the overlayfs upper directory `source_fd`) into the empty
// directory `dest_fd` as an image layer, hashing as it copies (one read of the data):
//  - whiteouts (0/0 character devices) stay whiteouts; an opaque directory (trusted. or
//    user.overlay.opaque=y) gets both attributes, so overlays with and without userxattr
//    (user-namespaced sandboxes use it) honour it; every other overlay attribute (origin,
//    impure, redirect) describes the source's mount and is dropped; user.* and
//    security.capability are kept, like the unpacker keeps them;
//  - hard links within the layer stay links; sockets are skipped (they mean nothing on disk);
//  - nothing is followed: the source belongs to the sandbox, so every entry is opened
//    relative to its parent with O_NOFOLLOW, and an entry on another file system is an error.
// The caller keeps the source still while it runs (the sandbox frozen). On error `dest_fd` is
// left partly filled for the caller to remove. Needs root (ownership, devices, trusted.*).
Result<CopiedLayer> CopyWritableLayer(int source_fd, int dest_fd, const CopyLayerOptions& options);

}  // namespace warren::image
