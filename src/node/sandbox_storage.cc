#include "node/sandbox_storage.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "base/dir_names.h"
#include "base/log.h"
#include "image/safe_fs.h"
#include "node/sandbox_files.h"
#include "os/btrfs.h"
#include "os/mount.h"
#include "os/run_tool.h"

namespace warren::node {
namespace {

constexpr int64_t kMinImageBytes = int64_t{1} << 30;
constexpr char kImageName[] = "sandboxes.btrfs";

auto Log() {
  static auto logger = base::Logger("node");
  return logger;
}

std::string HumanBytes(int64_t bytes) {
  constexpr int64_t kGi = int64_t{1} << 30, kMi = int64_t{1} << 20;
  if (bytes >= kGi) return fmt::format("{:.1f}Gi", static_cast<double>(bytes) / kGi);
  return fmt::format("{}Mi", bytes / kMi);
}

std::string Parent(const std::string& path) { return path.substr(0, path.find_last_of('/')); }
std::string Base(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

std::optional<os::MountEntry> MountAt(const std::string& path) {
  auto mounts = os::ReadMountInfo();
  if (!mounts.ok()) return std::nullopt;
  std::optional<os::MountEntry> found;
  for (const os::MountEntry& m : *mounts) {
    if (m.mount_point == path) found = m;  // the last one is on top
  }
  return found;
}

}  // namespace

Result<DiskSpace> ReadDiskSpace(const std::string& path) {
  struct statvfs st;
  if (statvfs(path.c_str(), &st) != 0) return ErrnoError(fmt::format("statvfs {}", path), errno);
  DiskSpace d;
  d.total_bytes = static_cast<int64_t>(st.f_blocks) * static_cast<int64_t>(st.f_frsize);
  d.free_bytes = static_cast<int64_t>(st.f_bavail) * static_cast<int64_t>(st.f_frsize);
  return d;
}

int64_t HostReserveBytes(const DiskSpace& host, const StorageOptions& options) {
  return std::max(host.total_bytes / 100 * options.reserve_percent, options.min_reserve_bytes);
}

Result<int64_t> StorageImageBytes(const DiskSpace& host, const StorageOptions& options) {
  const int64_t reserve = HostReserveBytes(host, options);
  const int64_t room = host.free_bytes - reserve;
  int64_t size = options.image_bytes > 0 ? std::min(options.image_bytes, room) : room;
  if (size < kMinImageBytes) {
    return FailedPreconditionError(fmt::format(
        "the data dir's file system has {} free and the host keeps {} of it, leaving {} for "
        "sandboxes (at least {} needed)",
        HumanBytes(host.free_bytes), HumanBytes(reserve), HumanBytes(std::max<int64_t>(room, 0)),
        HumanBytes(kMinImageBytes)));
  }
  return size;
}

std::optional<std::string> DiskPressure(const DiskSpace& host, const StorageOptions& options) {
  const int64_t reserve = HostReserveBytes(host, options);
  if (host.free_bytes >= reserve) return std::nullopt;
  return fmt::format(
      "the data dir's file system has {} free, below the {} kept for the host; no sandbox "
      "starts until space is freed",
      HumanBytes(host.free_bytes), HumanBytes(reserve));
}

SandboxStorage::SandboxStorage(std::string root, StorageOptions options)
    : root_(std::move(root)), sandboxes_dir_(root_ + "/sandboxes"), options_(options) {}

SandboxStorage::~SandboxStorage() {
  if (mount_) mount_->Release();
}

std::unique_ptr<SandboxStorage> SandboxStorage::Open(const std::string& root,
                                                     const StorageOptions& options) {
  std::unique_ptr<SandboxStorage> storage(new SandboxStorage(root, options));
  Status s = storage->Enforce();
  if (s.ok()) {
    storage->enforced_ = true;
    Log()->info("ephemeral-storage enforced dir={} image={} size={}", storage->sandboxes_dir_,
                storage->image_.empty() ? "(operator's btrfs)" : storage->image_,
                HumanBytes(storage->capacity_bytes_));
  } else {
    storage->mount_.reset();
    storage->image_.clear();
    storage->capacity_bytes_ = 0;
    storage->reason_ = s.message();
    Log()->warn(
        "ephemeral-storage is NOT enforced: {}; sandboxes run without a storage limit and "
        "templates that name ephemeral-storage are refused",
        storage->reason_);
  }
  return storage;
}

Status SandboxStorage::Enforce() {
  if (!options_.enforce) return FailedPreconditionError("turned off (WARREN_NODE_STORAGE=off)");
  RETURN_IF_ERROR(MakeDirs(sandboxes_dir_));
  const std::string image = root_ + "/" + kImageName;
  if (std::optional<os::MountEntry> m = MountAt(sandboxes_dir_)) {
    if (m->fs_type != "btrfs") {
      return FailedPreconditionError(fmt::format(
          "{} is a {} mount; ephemeral-storage needs btrfs there", sandboxes_dir_, m->fs_type));
    }
    std::error_code ec;
    if (os::LoopBackingFile(m->source) == std::filesystem::weakly_canonical(image, ec).string()) {
      // Left mounted by the previous agent on this root for its running sandboxes.
      mount_ = os::LoopMount::Adopt(sandboxes_dir_);
      image_ = image;
    }
  } else {
    // An empty volumes directory (made while the storage could not be mounted) hides nothing.
    (void)rmdir((sandboxes_dir_ + "/.volumes").c_str());
    if (!base::DirNames(sandboxes_dir_).empty()) {
      return FailedPreconditionError(fmt::format(
          "{} holds sandboxes made before it had a file system of its own; delete them (or "
          "their Sandbox objects) and restart",
          sandboxes_dir_));
    }
    struct stat st;
    if (lstat(image.c_str(), &st) != 0) {
      ASSIGN_OR_RETURN(DiskSpace host, ReadDiskSpace(root_));
      RETURN_IF_ERROR(MakeImage(host));
    } else if (!S_ISREG(st.st_mode)) {
      return FailedPreconditionError(fmt::format("{} is not a regular file", image));
    }
    ASSIGN_OR_RETURN(os::LoopMount mounted, os::LoopMount::Mount(image, sandboxes_dir_, "btrfs",
                                                                 MS_NOSUID | MS_NODEV, ""));
    mount_.emplace(std::move(mounted));
    image_ = image;
  }
  RETURN_IF_ERROR(os::EnableQuota(sandboxes_dir_));
  // User-namespaced sandboxes walk through it to their writable layer.
  if (chmod(sandboxes_dir_.c_str(), 0711) != 0) {
    return ErrnoError(fmt::format("chmod {}", sandboxes_dir_), errno);
  }
  ASSIGN_OR_RETURN(DiskSpace space, ReadDiskSpace(sandboxes_dir_));
  capacity_bytes_ = space.total_bytes;
  return Status::Ok();
}

Status SandboxStorage::MakeImage(const DiskSpace& host) {
  ASSIGN_OR_RETURN(int64_t size, StorageImageBytes(host, options_));
  const std::string image = root_ + "/" + kImageName;
  // Made under another name and renamed when complete, so a crash never leaves a half-made
  // image to be mounted.
  const std::string partial = image + ".partial";
  unlink(partial.c_str());
  {
    base::UniqueFd fd(open(partial.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600));
    if (!fd) return ErrnoError(fmt::format("create {}", partial), errno);
    if (ftruncate(fd.get(), size) != 0) {
      int err = errno;
      unlink(partial.c_str());
      return ErrnoError(fmt::format("size {} to {}", partial, HumanBytes(size)), err);
    }
  }
  Status made = os::RunTool({"mkfs.btrfs", "-q", "--nodiscard", "-L", "warren-sandboxes", partial});
  if (made.ok() && rename(partial.c_str(), image.c_str()) != 0) {
    made = ErrnoError(fmt::format("rename {}", partial), errno);
  }
  if (!made.ok()) {
    unlink(partial.c_str());
    if (made.code() == StatusCode::kNotFound) {
      return FailedPreconditionError("mkfs.btrfs is not installed (Debian: btrfs-progs)");
    }
    return made;
  }
  Log()->info("sandbox storage image made image={} size={} (sparse)", image, HumanBytes(size));
  return Status::Ok();
}

Status SandboxStorage::MakeSandboxDir(const std::string& dir, int64_t limit_bytes) const {
  if (!enforced_) return MakeDirs(dir);
  if (!dir.starts_with(sandboxes_dir_ + "/") || dir.find("/..") != std::string::npos) {
    return InvalidArgumentError(fmt::format("{} is not a directory of {}", dir, sandboxes_dir_));
  }
  Status made = os::CreateSubvolume(Parent(dir), Base(dir));
  if (!made.ok() && !(made.code() == StatusCode::kAlreadyExists && os::IsSubvolume(dir))) {
    return made;
  }
  if (chmod(dir.c_str(), 0711) != 0) return ErrnoError(fmt::format("chmod {}", dir), errno);
  return os::SetSubvolumeLimit(dir, static_cast<uint64_t>(limit_bytes));
}

Status SandboxStorage::RemoveSandboxDir(const std::string& dir) const {
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoError(fmt::format("stat {}", dir), errno);
  }
  if (os::IsSubvolume(dir)) {
    // One ioctl however many files; it fails only when the sandbox nested a subvolume of its
    // own in there, which the walk below removes (rmdir deletes an empty subvolume).
    if (os::DestroySubvolume(Parent(dir), Base(dir)).ok()) return Status::Ok();
  }
  return image::RemoveTree(dir);
}

std::optional<std::string> SandboxStorage::HostDiskPressure() const {
  auto host = ReadDiskSpace(root_);
  if (!host.ok()) return std::nullopt;
  return DiskPressure(*host, options_);
}

void SandboxStorage::Close(bool sandboxes_remain) {
  if (!mount_) return;
  if (sandboxes_remain) {
    Log()->info("sandbox storage stays mounted for running sandboxes dir={}", sandboxes_dir_);
    mount_->Release();
  } else if (Status s = mount_->Unmount(); !s.ok()) {
    Log()->warn("sandbox storage unmount failed dir={} error=\"{}\"", sandboxes_dir_, s.ToString());
  }
  mount_.reset();
}

}  // namespace warren::node
