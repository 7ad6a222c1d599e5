#include "image/oci_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "base/unique_fd.h"
#include "image/digest.h"
#include "image/safe_fs.h"

namespace warren::image {
namespace {

struct ArchiveDeleter {
  void operator()(struct archive* ar) const { archive_read_free(ar); }
};

// The layout files we take, as path components; blobs only under their digest name.
bool IsLayoutFile(const std::vector<std::string>& c) {
  if (c.size() == 1) return c[0] == "oci-layout" || c[0] == "index.json";
  return c.size() == 3 && c[0] == "blobs" && c[1] == "sha256" &&
         Digest::Parse("sha256:" + c[2]).ok();
}

const char* Message(struct archive* ar) {
  const char* msg = archive_error_string(ar);
  return msg != nullptr ? msg : "unknown error";
}

}  // namespace

Status ExtractLayoutArchive(const std::string& tar_path, int dest_fd, uint64_t max_bytes) {
  std::unique_ptr<struct archive, ArchiveDeleter> ar(archive_read_new());
  archive_read_support_filter_gzip(ar.get());
  archive_read_support_filter_zstd(ar.get());
  archive_read_support_format_tar(ar.get());
  if (archive_read_open_filename(ar.get(), tar_path.c_str(), 1 << 20) != ARCHIVE_OK) {
    return InvalidArgumentError(
        fmt::format("'{}' is not a tar archive of an OCI layout: {}", tar_path, Message(ar.get())));
  }
  uint64_t total = 0;
  std::vector<char> buffer(1 << 20);
  while (true) {
    struct archive_entry* entry = nullptr;
    int r = archive_read_next_header(ar.get(), &entry);
    if (r == ARCHIVE_EOF) break;
    if (r < ARCHIVE_WARN) {
      return InvalidArgumentError(
          fmt::format("'{}': corrupt archive: {}", tar_path, Message(ar.get())));
    }
    const char* raw = archive_entry_pathname(entry);
    if (raw == nullptr) continue;
    auto components = SplitEntryPath(raw);
    if (!components.ok()) return components.status().WithPrefix(tar_path);
    if (archive_entry_filetype(entry) != AE_IFREG || archive_entry_hardlink(entry) != nullptr ||
        !IsLayoutFile(*components)) {
      continue;
    }
    ASSIGN_OR_RETURN(base::UniqueFd dir,
                     OpenDirBeneath(dest_fd, *components, components->size() - 1, true, 0700));
    const std::string& name = components->back();
    // A repeated name replaces the earlier copy, as tar does.
    if (unlinkat(dir.get(), name.c_str(), 0) != 0 && errno != ENOENT) {
      return ErrnoError(fmt::format("replacing '{}'", PrintablePath(raw)), errno);
    }
    int fd_raw =
        openat(dir.get(), name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd_raw < 0) return ErrnoError(fmt::format("create '{}'", PrintablePath(raw)), errno);
    base::UniqueFd out(fd_raw);
    while (true) {
      la_ssize_t n = archive_read_data(ar.get(), buffer.data(), buffer.size());
      if (n == 0) break;
      if (n < 0) {
        return InvalidArgumentError(fmt::format("'{}': corrupt archive reading '{}': {}", tar_path,
                                                PrintablePath(raw), Message(ar.get())));
      }
      total += static_cast<uint64_t>(n);
      if (total > max_bytes) {
        return ResourceExhaustedError(
            fmt::format("'{}' unpacks to more than {} bytes", tar_path, max_bytes));
      }
      size_t done = 0;
      while (done < static_cast<size_t>(n)) {
        ssize_t w = write(out.get(), buffer.data() + done, static_cast<size_t>(n) - done);
        if (w < 0) {
          if (errno == EINTR) continue;
          return ErrnoError(fmt::format("write '{}'", PrintablePath(raw)), errno);
        }
        done += static_cast<size_t>(w);
      }
    }
  }
  return Status::Ok();
}

}  // namespace warren::image
