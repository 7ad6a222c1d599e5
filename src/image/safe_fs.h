#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

// File system helpers that never follow a symlink and never leave the directory they start from.
// The layer unpacker and the store's cleanup use them on untrusted trees. Free functions;
// thread-safe as far as the kernel objects they touch are not changed concurrently.

namespace warren::image {

// Splits an archive entry path into its components: "./usr//bin/" → {"usr", "bin"}; "." and
// "./" → {} (the root itself). Rejects absolute paths, ".." anywhere, empty input, components
// over NAME_MAX and paths over PATH_MAX with InvalidArgument naming the path.
Result<std::vector<std::string>> SplitEntryPath(std::string_view path);

// A printable, bounded rendering of an untrusted path for error messages.
std::string PrintablePath(std::string_view path);

// Opens the directory `components[0..count)` beneath `root_fd` for reading, refusing symlinks
// and magic links at every step (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS). With `create`,
// missing directories are made (mode `create_mode`, subject to the umask) one component at a time.
// Errors name the offending path; a symlink or non-directory in the way is InvalidArgument.
Result<base::UniqueFd> OpenDirBeneath(int root_fd, const std::vector<std::string>& components,
                                      size_t count, bool create, mode_t create_mode = 0755);

// Removes `name` in `dir_fd` and, if it is a directory, everything under it, without following
// symlinks and without crossing into another file system (a mount inside is an error, not
// something to delete through). Makes directories writable as it goes so trees with 0555 or
// 0000 directories can be removed by their non-root owner. A missing `name` is OK.
Status RemoveTreeAt(int dir_fd, const std::string& name);
// The same for an absolute or cwd-relative path.
Status RemoveTree(const std::string& path);

// Writes `data` to `dir/name` atomically: a temporary file in `dir`, fsync, rename, fsync of the
// directory. Readers see the old or the new content, never a mix, even across a crash. Without
// `durable` the two fsyncs are skipped: still atomic for readers and across a crash of the
// process, but a crash of the machine may lose the file (or leave it empty).
Status WriteFileAtomic(const std::string& dir, const std::string& name, std::string_view data,
                       bool durable = true);

// Reads a whole regular file of at most `max_size` bytes (larger is ResourceExhausted).
Result<std::string> ReadFileLimited(int dir_fd, const std::string& name, size_t max_size);

// Bytes used by regular files under `path` (apparent sizes, hardlinks counted once per entry).
uint64_t TreeBytes(const std::string& path);

}  // namespace warren::image
