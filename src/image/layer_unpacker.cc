#include "image/layer_unpacker.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "image/safe_fs.h"

namespace warren::image {
namespace {

constexpr std::string_view kWhiteoutPrefix = ".wh.";
constexpr std::string_view kOpaqueMarker = ".wh..wh..opq";
constexpr std::string_view kWhiteoutMeta = ".wh..wh.";
constexpr char kOpaqueXattr[] = "trusted.overlay.opaque";

// Extended attributes a layer may carry. user.* is the application's; security.capability is
// how file capabilities ship (ping). Everything else is dropped: trusted.overlay.* would let a
// layer steer overlayfs (redirects, metacopy), security.selinux/ima belong to the host policy.
bool XattrAllowed(std::string_view name, bool same_owner) {
  if (name.starts_with("user.")) return true;
  return same_owner && name == "security.capability";
}

std::string ProcPath(int dir_fd, const std::string& name) {
  return fmt::format("/proc/self/fd/{}/{}", dir_fd, name);
}

struct DirMeta {
  std::vector<std::string> components;
  mode_t mode = 0755;
  struct timespec times[2] = {};
};

// One unpack: owns the directory-metadata list and a cache of the last parent directory
// opened (tar streams list a directory's entries together).
class Unpacker {
 public:
  Unpacker(struct archive* ar, int root_fd, const UnpackOptions& options)
      : ar_(ar), root_fd_(root_fd), options_(options) {}

  Result<UnpackStats> Run() {
    while (true) {
      struct archive_entry* entry = nullptr;
      int r = archive_read_next_header(ar_, &entry);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return ArchiveError("reading the next entry");
      if (++stats_.entries > options_.limits.max_entries) {
        return ResourceExhaustedError(
            fmt::format("layer has more than {} entries", options_.limits.max_entries));
      }
      RETURN_IF_ERROR(Entry(entry));
    }
    RETURN_IF_ERROR(ApplyDirMeta());
    return stats_;
  }

 private:
  Status ArchiveError(std::string_view what) {
    const char* msg = archive_error_string(ar_);
    return InvalidArgumentError(
        fmt::format("corrupt layer: {}: {}", what, msg != nullptr ? msg : "unknown error"));
  }

  Status EntryError(std::string_view path, std::string_view what, int err) {
    return ErrnoError(fmt::format("entry '{}': {}", PrintablePath(path), what), err);
  }

  // The parent directory of `components`, made if missing, resolved beneath the root.
  Result<int> Parent(const std::vector<std::string>& components) {
    size_t n = components.size() - 1;
    std::string key;
    for (size_t i = 0; i < n; ++i) {
      key += components[i];
      key.push_back('/');
    }
    if (parent_fd_.valid() && key == parent_key_) return parent_fd_.get();
    parent_fd_.reset();
    ASSIGN_OR_RETURN(parent_fd_, OpenDirBeneath(root_fd_, components, n, /*create=*/true));
    parent_key_ = std::move(key);
    return parent_fd_.get();
  }

  void ForgetParent() {
    parent_fd_.reset();
    parent_key_.clear();
  }

  Status Entry(struct archive_entry* entry) {
    const char* raw_path = archive_entry_pathname(entry);
    if (raw_path == nullptr) raw_path = archive_entry_pathname_utf8(entry);
    if (raw_path == nullptr) return InvalidArgumentError("corrupt layer: entry without a path");
    std::string path = raw_path;
    ASSIGN_OR_RETURN(std::vector<std::string> components, SplitEntryPath(path));
    mode_t type = archive_entry_filetype(entry);
    const char* hardlink = archive_entry_hardlink(entry);

    if (components.empty()) {
      // "./": the layer root itself.
      if (hardlink != nullptr || type != AE_IFDIR) {
        return InvalidArgumentError(fmt::format(
            "entry '{}' names the layer root but is not a directory", PrintablePath(path)));
      }
      RETURN_IF_ERROR(ApplyOwnerAndXattrs(entry, root_fd_, path));
      RecordDir(entry, components);
      return Status::Ok();
    }

    const std::string& name = components.back();
    if (name.starts_with(kWhiteoutPrefix)) return Whiteout(components, path);

    std::vector<std::string> link_target;
    if (hardlink != nullptr) {
      auto split = SplitEntryPath(hardlink);
      if (!split.ok()) {
        return split.status().WithPrefix(fmt::format("hardlink '{}'", PrintablePath(path)));
      }
      link_target = std::move(split).value();
      if (link_target == components) return Status::Ok();  // A link to itself: nothing to do.
    }

    ASSIGN_OR_RETURN(int parent, Parent(components));
    struct stat existing;
    bool exists = fstatat(parent, name.c_str(), &existing, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && errno != ENOENT) return EntryError(path, "stat", errno);
    bool keep_dir = exists && S_ISDIR(existing.st_mode) && type == AE_IFDIR && hardlink == nullptr;
    if (exists && !keep_dir) {
      // A later entry for the same path replaces the earlier one, as in tar.
      if (S_ISDIR(existing.st_mode)) {
        RETURN_IF_ERROR(RemoveTreeAt(parent, name));
      } else if (unlinkat(parent, name.c_str(), 0) != 0) {
        return EntryError(path, "replacing", errno);
      }
    }

    if (hardlink != nullptr) return Hardlink(parent, name, hardlink, link_target, path);
    switch (type) {
      case AE_IFDIR:
        return Directory(entry, parent, name, components, path, keep_dir);
      case AE_IFREG:
        return RegularFile(entry, parent, name, path);
      case AE_IFLNK:
        return Symlink(entry, parent, name, path);
      case AE_IFCHR:
      case AE_IFBLK:
      case AE_IFIFO:
        return Node(entry, parent, name, path, type);
      case AE_IFSOCK:
        return Status::Ok();  // Sockets are made by whoever listens; nothing to unpack.
      default:
        return InvalidArgumentError(
            fmt::format("entry '{}' has unsupported file type {:o}", PrintablePath(path), type));
    }
  }

  Status Whiteout(const std::vector<std::string>& components, const std::string& path) {
    const std::string& name = components.back();
    if (name == kOpaqueMarker) {
      // The directory holding the marker hides everything below it in lower layers.
      ASSIGN_OR_RETURN(base::UniqueFd dir,
                       OpenDirBeneath(root_fd_, components, components.size() - 1, true));
      if (fsetxattr(dir.get(), kOpaqueXattr, "y", 1, 0) != 0) {
        return EntryError(path, "marking the directory opaque (trusted.overlay.opaque needs root)",
                          errno);
      }
      ++stats_.opaque_dirs;
      return Status::Ok();
    }
    if (name.starts_with(kWhiteoutMeta)) return Status::Ok();  // aufs bookkeeping, not a file.
    std::string target = name.substr(kWhiteoutPrefix.size());
    if (target.empty() || target == "." || target == "..") {
      return InvalidArgumentError(
          fmt::format("entry '{}' is a whiteout of nothing", PrintablePath(path)));
    }
    ASSIGN_OR_RETURN(int parent, Parent(components));
    struct stat st;
    if (fstatat(parent, target.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
      // The same layer also has the file: a whiteout only hides lower layers, so the file wins.
      return Status::Ok();
    }
    if (mknodat(parent, target.c_str(), S_IFCHR | 0, makedev(0, 0)) != 0) {
      return EntryError(path, "creating the whiteout device", errno);
    }
    ++stats_.whiteouts;
    return Status::Ok();
  }

  Status Hardlink(int parent, const std::string& name, const char* target_raw,
                  const std::vector<std::string>& target, const std::string& path) {
    if (target.empty()) {
      return InvalidArgumentError(
          fmt::format("hardlink '{}' points at the layer root", PrintablePath(path)));
    }
    auto target_dir = OpenDirBeneath(root_fd_, target, target.size() - 1, /*create=*/false);
    if (!target_dir.ok()) {
      return InvalidArgumentError(fmt::format("hardlink '{}' → '{}': {}", PrintablePath(path),
                                              PrintablePath(target_raw),
                                              target_dir.status().message()));
    }
    struct stat st;
    if (fstatat(target_dir->get(), target.back().c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      return InvalidArgumentError(fmt::format("hardlink '{}' → '{}': target is not in the layer",
                                              PrintablePath(path), PrintablePath(target_raw)));
    }
    if (S_ISDIR(st.st_mode)) {
      return InvalidArgumentError(fmt::format("hardlink '{}' → '{}': target is a directory",
                                              PrintablePath(path), PrintablePath(target_raw)));
    }
    if (linkat(target_dir->get(), target.back().c_str(), parent, name.c_str(), 0) != 0) {
      return EntryError(path, "linking", errno);
    }
    ++stats_.hardlinks;
    return Status::Ok();
  }

  Status Directory(struct archive_entry* entry, int parent, const std::string& name,
                   const std::vector<std::string>& components, const std::string& path,
                   bool exists) {
    // Owner-only until the end, so a non-root unpacker can still fill a 0555 directory.
    if (!exists && mkdirat(parent, name.c_str(), 0700) != 0) {
      return EntryError(path, "mkdir", errno);
    }
    int raw = openat(parent, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (raw < 0) return EntryError(path, "open", errno);
    base::UniqueFd fd(raw);
    RETURN_IF_ERROR(ApplyOwnerAndXattrs(entry, fd.get(), path));
    RecordDir(entry, components);
    if (!exists) ++stats_.dirs;
    return Status::Ok();
  }

  Status RegularFile(struct archive_entry* entry, int parent, const std::string& name,
                     const std::string& path) {
    int64_t size = archive_entry_size_is_set(entry) ? archive_entry_size(entry) : 0;
    if (size < 0 || static_cast<uint64_t>(size) > options_.limits.max_bytes - stats_.bytes) {
      return ResourceExhaustedError(fmt::format("entry '{}': layer exceeds the limit of {} bytes",
                                                PrintablePath(path), options_.limits.max_bytes));
    }
    int raw =
        openat(parent, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (raw < 0) return EntryError(path, "create", errno);
    base::UniqueFd fd(raw);
    int64_t end = 0;
    while (true) {
      const void* buf = nullptr;
      size_t len = 0;
      la_int64_t offset = 0;
      int r = archive_read_data_block(ar_, &buf, &len, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r < ARCHIVE_WARN) return ArchiveError(fmt::format("reading '{}'", PrintablePath(path)));
      if (offset < 0 || offset + static_cast<int64_t>(len) > size) {
        return InvalidArgumentError(
            fmt::format("corrupt layer: entry '{}' has data beyond its size", PrintablePath(path)));
      }
      const char* p = static_cast<const char*>(buf);
      size_t done = 0;
      while (done < len) {
        ssize_t n = pwrite(fd.get(), p + done, len - done, offset + static_cast<off_t>(done));
        if (n < 0) {
          if (errno == EINTR) continue;
          return EntryError(path, "write", errno);
        }
        done += static_cast<size_t>(n);
      }
      end = std::max<int64_t>(end, offset + static_cast<int64_t>(len));
    }
    // Sparse files end in a hole the data blocks never reach.
    if (end < size && ftruncate(fd.get(), size) != 0) return EntryError(path, "truncate", errno);
    stats_.bytes += static_cast<uint64_t>(size);
    ++stats_.files;
    RETURN_IF_ERROR(ApplyOwnerAndXattrs(entry, fd.get(), path));
    // After chown, which clears setuid/setgid.
    if (fchmod(fd.get(), archive_entry_perm(entry) & 07777) != 0) {
      return EntryError(path, "chmod", errno);
    }
    struct timespec times[2];
    EntryTimes(entry, times);
    if (futimens(fd.get(), times) != 0) return EntryError(path, "set times", errno);
    return Status::Ok();
  }

  Status Symlink(struct archive_entry* entry, int parent, const std::string& name,
                 const std::string& path) {
    const char* target = archive_entry_symlink(entry);
    if (target == nullptr) target = archive_entry_symlink_utf8(entry);
    if (target == nullptr || *target == '\0') {
      return InvalidArgumentError(fmt::format("symlink '{}' has no target", PrintablePath(path)));
    }
    // The target may say anything (absolute, ".."): it is only text here, and nothing in the
    // unpacker ever follows a symlink.
    if (symlinkat(target, parent, name.c_str()) != 0) return EntryError(path, "symlink", errno);
    ++stats_.symlinks;
    RETURN_IF_ERROR(ApplyOwnerAt(entry, parent, name, path));
    RETURN_IF_ERROR(ApplyXattrsAt(entry, parent, name, path, /*user_allowed=*/false));
    struct timespec times[2];
    EntryTimes(entry, times);
    if (utimensat(parent, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return EntryError(path, "set times", errno);
    }
    return Status::Ok();
  }

  Status Node(struct archive_entry* entry, int parent, const std::string& name,
              const std::string& path, mode_t type) {
    dev_t dev = 0;
    if (type != AE_IFIFO)
      dev = makedev(archive_entry_rdevmajor(entry), archive_entry_rdevminor(entry));
    mode_t perm = archive_entry_perm(entry) & 07777;
    if (mknodat(parent, name.c_str(), type | (perm & 0777), dev) != 0) {
      return EntryError(path, type == AE_IFIFO ? "mkfifo" : "mknod (device nodes need root)",
                        errno);
    }
    ++stats_.devices;
    RETURN_IF_ERROR(ApplyOwnerAt(entry, parent, name, path));
    // The node was made by us an instant ago in a directory only we write to, so following the
    // name cannot reach anything else. chmod after chown, and past the umask.
    if (fchmodat(parent, name.c_str(), perm, 0) != 0) return EntryError(path, "chmod", errno);
    RETURN_IF_ERROR(ApplyXattrsAt(entry, parent, name, path, /*user_allowed=*/type == AE_IFIFO));
    struct timespec times[2];
    EntryTimes(entry, times);
    if (utimensat(parent, name.c_str(), times, AT_SYMLINK_NOFOLLOW) != 0) {
      return EntryError(path, "set times", errno);
    }
    return Status::Ok();
  }

  // Owner and xattrs through an open file or directory descriptor.
  Status ApplyOwnerAndXattrs(struct archive_entry* entry, int fd, const std::string& path) {
    if (options_.same_owner) {
      if (fchown(fd, static_cast<uid_t>(archive_entry_uid(entry)),
                 static_cast<gid_t>(archive_entry_gid(entry))) != 0) {
        return EntryError(path, "chown", errno);
      }
    }
    archive_entry_xattr_reset(entry);
    const char* xname = nullptr;
    const void* value = nullptr;
    size_t size = 0;
    while (archive_entry_xattr_next(entry, &xname, &value, &size) == ARCHIVE_OK) {
      if (xname == nullptr || !XattrAllowed(xname, options_.same_owner)) {
        ++stats_.xattrs_dropped;
        continue;
      }
      if (fsetxattr(fd, xname, value, size, 0) != 0) {
        return EntryError(path, fmt::format("setting xattr {}", PrintablePath(xname)), errno);
      }
    }
    return Status::Ok();
  }

  Status ApplyOwnerAt(struct archive_entry* entry, int parent, const std::string& name,
                      const std::string& path) {
    if (!options_.same_owner) return Status::Ok();
    if (fchownat(parent, name.c_str(), static_cast<uid_t>(archive_entry_uid(entry)),
                 static_cast<gid_t>(archive_entry_gid(entry)), AT_SYMLINK_NOFOLLOW) != 0) {
      return EntryError(path, "chown", errno);
    }
    return Status::Ok();
  }

  // Xattrs on a node that cannot be opened for writing (symlinks, devices): through the
  // parent's /proc/self/fd entry, which is already resolved beneath the root, with the l*
  // call so the final name is not followed.
  Status ApplyXattrsAt(struct archive_entry* entry, int parent, const std::string& name,
                       const std::string& path, bool user_allowed) {
    archive_entry_xattr_reset(entry);
    const char* xname = nullptr;
    const void* value = nullptr;
    size_t size = 0;
    while (archive_entry_xattr_next(entry, &xname, &value, &size) == ARCHIVE_OK) {
      // The kernel refuses user.* on symlinks and devices; capabilities make no sense there.
      std::string_view n = xname != nullptr ? xname : "";
      if (!user_allowed || !n.starts_with("user.")) {
        ++stats_.xattrs_dropped;
        continue;
      }
      if (lsetxattr(ProcPath(parent, name).c_str(), xname, value, size, 0) != 0) {
        return EntryError(path, fmt::format("setting xattr {}", PrintablePath(n)), errno);
      }
    }
    return Status::Ok();
  }

  static void EntryTimes(struct archive_entry* entry, struct timespec times[2]) {
    times[1].tv_sec = archive_entry_mtime(entry);
    times[1].tv_nsec = archive_entry_mtime_nsec(entry);
    if (archive_entry_atime_is_set(entry)) {
      times[0].tv_sec = archive_entry_atime(entry);
      times[0].tv_nsec = archive_entry_atime_nsec(entry);
    } else {
      times[0] = times[1];
    }
    for (int i = 0; i < 2; ++i) {
      if (times[i].tv_nsec < 0 || times[i].tv_nsec >= 1'000'000'000) times[i].tv_nsec = 0;
    }
  }

  void RecordDir(struct archive_entry* entry, const std::vector<std::string>& components) {
    DirMeta meta;
    meta.components = components;
    meta.mode = archive_entry_perm(entry) & 07777;
    EntryTimes(entry, meta.times);
    std::string key;
    for (const auto& c : components) key += c + "/";
    dir_meta_[key] = std::move(meta);
  }

  // Directory modes and times go last: writing children changes a directory's mtime, and a
  // read-only mode would stop a non-root unpacker from writing them.
  Status ApplyDirMeta() {
    ForgetParent();
    // Deepest first, so a directory's own times are set after its children's chmods.
    for (auto it = dir_meta_.rbegin(); it != dir_meta_.rend(); ++it) {
      const DirMeta& meta = it->second;
      auto fd = OpenDirBeneath(root_fd_, meta.components, meta.components.size(), false);
      if (!fd.ok()) continue;  // Replaced by a later non-directory entry.
      if (fchmod(fd->get(), meta.mode) != 0) return EntryError(it->first, "chmod", errno);
      if (futimens(fd->get(), meta.times) != 0) return EntryError(it->first, "set times", errno);
    }
    return Status::Ok();
  }

  struct archive* ar_;
  int root_fd_;
  UnpackOptions options_;
  UnpackStats stats_;
  std::map<std::string, DirMeta> dir_meta_;
  base::UniqueFd parent_fd_;
  std::string parent_key_;
};

struct ArchiveDeleter {
  void operator()(struct archive* ar) const { archive_read_free(ar); }
};
using ArchivePtr = std::unique_ptr<struct archive, ArchiveDeleter>;

ArchivePtr NewLayerReader() {
  ArchivePtr ar(archive_read_new());
  archive_read_support_filter_gzip(ar.get());
  archive_read_support_filter_zstd(ar.get());
  archive_read_support_format_tar(ar.get());
  // A layer with no entries is a valid (empty) tar; libarchive needs to be told.
  archive_read_support_format_empty(ar.get());
  return ar;
}

// Streams a blob into libarchive while hashing exactly the bytes libarchive consumes, so the
// digest is checked without a second pass over the file.
struct HashingSource {
  int fd;
  Sha256Stream hasher;
  std::vector<char> buffer = std::vector<char>(1 << 20);
  int read_errno = 0;

  static la_ssize_t Read(struct archive* ar, void* self, const void** out) {
    auto* src = static_cast<HashingSource*>(self);
    while (true) {
      ssize_t n = read(src->fd, src->buffer.data(), src->buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        src->read_errno = errno;
        archive_set_error(ar, errno, "reading the blob failed");
        return -1;
      }
      src->hasher.Update(src->buffer.data(), static_cast<size_t>(n));
      *out = src->buffer.data();
      return n;
    }
  }

  // Hashes whatever libarchive did not need (padding after the end-of-archive marker).
  Status Drain() {
    while (true) {
      ssize_t n = read(fd, buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoError("reading the blob", errno);
      if (n == 0) return Status::Ok();
      hasher.Update(buffer.data(), static_cast<size_t>(n));
    }
  }
};

}  // namespace

Result<UnpackStats> UnpackTar(struct archive* ar, int root_fd, const UnpackOptions& options) {
  Unpacker unpacker(ar, root_fd, options);
  return unpacker.Run();
}

Result<UnpackStats> UnpackLayerBlob(int blob_fd, const BlobExpectation& expect, int root_fd,
                                    const UnpackOptions& options) {
  HashingSource source{blob_fd};
  ArchivePtr ar = NewLayerReader();
  if (archive_read_open(ar.get(), &source, nullptr, &HashingSource::Read, nullptr) != ARCHIVE_OK) {
    const char* msg = archive_error_string(ar.get());
    return InvalidArgumentError(fmt::format("layer {} is not a tar, tar+gzip or tar+zstd blob: {}",
                                            expect.digest.ToString(),
                                            msg != nullptr ? msg : "unknown format"));
  }
  auto stats = UnpackTar(ar.get(), root_fd, options);
  if (!stats.ok()) {
    return stats.status().WithPrefix(fmt::format("layer {}", expect.digest.ToString()));
  }
  RETURN_IF_ERROR(source.Drain());
  uint64_t size = source.hasher.bytes();
  Digest got = source.hasher.Finish();
  if (got != expect.digest) {
    return DataLossError(fmt::format("layer {} does not match its digest: the blob hashes to {}",
                                     expect.digest.ToString(), got.ToString()));
  }
  if (expect.size >= 0 && size != static_cast<uint64_t>(expect.size)) {
    return DataLossError(fmt::format("layer {} is {} bytes, the manifest says {}",
                                     expect.digest.ToString(), size, expect.size));
  }
  return stats;
}

Result<UnpackStats> UnpackLayerBytes(std::string_view bytes, int root_fd,
                                     const UnpackOptions& options) {
  ArchivePtr ar = NewLayerReader();
  if (archive_read_open_memory(ar.get(), bytes.data(), bytes.size()) != ARCHIVE_OK) {
    const char* msg = archive_error_string(ar.get());
    return InvalidArgumentError(fmt::format("layer is not a tar, tar+gzip or tar+zstd stream: {}",
                                            msg != nullptr ? msg : "unknown format"));
  }
  return UnpackTar(ar.get(), root_fd, options);
}

}  // namespace warren::image
