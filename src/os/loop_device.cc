#include "os/loop_device.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <linux/loop.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {
namespace {

// Another process may take the device LOOP_CTL_GET_FREE named before we configure it.
constexpr int kAttachAttempts = 16;

}  // namespace

Result<LoopDevice> LoopDevice::Attach(const std::string& image) {
  base::UniqueFd backing(open(image.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW));
  if (!backing) return ErrnoError(fmt::format("open {}", image), errno);
  base::UniqueFd control(open("/dev/loop-control", O_RDWR | O_CLOEXEC));
  if (!control) {
    if (errno == ENOENT) return UnavailableError("this kernel has no loop devices");
    return ErrnoError("open /dev/loop-control", errno);
  }
  int last_errno = 0;
  for (int attempt = 0; attempt < kAttachAttempts; ++attempt) {
    int n = ioctl(control.get(), LOOP_CTL_GET_FREE);
    if (n < 0) return ErrnoError("LOOP_CTL_GET_FREE", errno);
    std::string path = fmt::format("/dev/loop{}", n);
    base::UniqueFd dev(open(path.c_str(), O_RDWR | O_CLOEXEC));
    if (!dev) {
      last_errno = errno;
      if (errno == ENOENT) continue;  // udev/devtmpfs has not made the node yet
      return ErrnoError(fmt::format("open {}", path), errno);
    }
    struct loop_config config;
    memset(&config, 0, sizeof config);
    config.fd = static_cast<uint32_t>(backing.get());
    config.info.lo_flags = LO_FLAGS_AUTOCLEAR;
    if (ioctl(dev.get(), LOOP_CONFIGURE, &config) == 0) {
      return LoopDevice(std::move(path), std::move(dev));
    }
    last_errno = errno;
    if (errno != EBUSY) return ErrnoError(fmt::format("LOOP_CONFIGURE {}", path), errno);
  }
  return ErrnoError(
      fmt::format("no free loop device for {} after {} attempts", image, kAttachAttempts),
      last_errno);
}

std::string LoopBackingFile(const std::string& device) {
  constexpr std::string_view kPrefix = "/dev/loop";
  if (device.rfind(kPrefix, 0) != 0) return "";
  std::string name = device.substr(std::string_view("/dev/").size());
  auto text = base::ReadSmallFile(fmt::format("/sys/block/{}/loop/backing_file", name), 8192);
  if (!text.ok()) return "";
  return std::string(base::TrimSpace(*text));
}

std::string FindLoopDeviceOf(const std::string& image) {
  std::error_code ec;
  const std::string wanted = std::filesystem::weakly_canonical(image, ec).string();
  if (ec) return "";
  for (const auto& entry : std::filesystem::directory_iterator("/sys/block", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("loop", 0) != 0) continue;
    const std::string device = "/dev/" + name;
    if (LoopBackingFile(device) == wanted) return device;
  }
  return "";
}

Result<LoopMount> LoopMount::Mount(const std::string& image, const std::string& target,
                                   const std::string& fs_type, unsigned long flags,
                                   const std::string& data) {
  std::string device = FindLoopDeviceOf(image);
  std::optional<LoopDevice> attached;
  if (device.empty()) {
    ASSIGN_OR_RETURN(LoopDevice loop, LoopDevice::Attach(image));
    device = loop.path();
    attached.emplace(std::move(loop));  // held open until the mount holds the device
  }
  if (mount(device.c_str(), target.c_str(), fs_type.c_str(), flags,
            data.empty() ? nullptr : data.c_str()) != 0) {
    return ErrnoError(fmt::format("mount {} ({} on {}) at {}", fs_type, image, device, target),
                      errno);
  }
  return LoopMount(target);
}

LoopMount& LoopMount::operator=(LoopMount&& other) noexcept {
  if (this != &other) {
    Unmount().IgnoreError();
    target_ = std::exchange(other.target_, "");
  }
  return *this;
}

Status LoopMount::Unmount() {
  if (target_.empty()) return Status::Ok();
  const std::string target = std::exchange(target_, "");
  if (umount2(target.c_str(), MNT_DETACH) != 0 && errno != EINVAL && errno != ENOENT) {
    return ErrnoError(fmt::format("unmount {}", target), errno);
  }
  return Status::Ok();
}

}  // namespace warren::os
