#pragma once

// Whether gzipping a download pays. Node's fetch (and so every E2B SDK read) offers gzip on every
// request, but deflating data that does not shrink (media, archives, random bytes) only burns the
// sandbox's CPU: 100 MiB of random bytes took 2.2 s gzipped against 0.4 s in identity. So when the
// client would also take identity, GET /files deflates the file's first bytes into a scratch
// buffer and gzips the whole file only if they shrank enough. Pure function over the bytes;
// thread-safe.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace warren::envd {

// How much of a file the probe looks at: one deflate window's worth, read before the response head.
inline constexpr size_t kGzipProbeBytes = 64 * 1024;
// Below this the gzip header, trailer and chunked framing eat what compression could save.
inline constexpr uint64_t kGzipMinFileBytes = 1024;

// True when `head`, the first bytes of a file of `file_size` bytes (up to kGzipProbeBytes),
// deflates at level 1 (the level the download is served at) to at most 90 % of its size. False for
// files under kGzipMinFileBytes, for an empty head, and for data that barely shrinks or grows.
bool GzipPays(std::string_view head, uint64_t file_size);

}  // namespace warren::envd
