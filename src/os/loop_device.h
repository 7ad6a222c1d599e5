#pragma once

#include <string>
#include <utility>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// A loop block device backed by an image file, attached with LO_FLAGS_AUTOCLEAR: the kernel
// detaches it when its last user goes (this object's fd, and any mount of it). So a loop
// device that was never mounted is detached when this object is destroyed, and one that was
// mounted is detached by the last unmount — a crashed owner leaks no device once its mount
// is gone. Move-only; not thread-safe.
class LoopDevice {
 public:
  // Finds a free loop device (LOOP_CTL_GET_FREE, which adds one when all are taken) and binds
  // `image` to it read-write with LOOP_CONFIGURE, retrying when another process takes the same
  // device first. NotFound when `image` is missing; Unavailable when the kernel has no loop
  // devices (no /dev/loop-control).
  static Result<LoopDevice> Attach(const std::string& image);

  LoopDevice(LoopDevice&&) = default;
  LoopDevice& operator=(LoopDevice&&) = default;

  // /dev/loopN.
  const std::string& path() const { return path_; }

 private:
  LoopDevice(std::string path, base::UniqueFd fd) : path_(std::move(path)), fd_(std::move(fd)) {}
  std::string path_;
  base::UniqueFd fd_;
};

// A file system image mounted through a loop device at `target`. Owns the mount: the
// destructor unmounts it (MNT_DETACH; the loop device then detaches itself) unless Release()
// was called, for a mount that must outlive its owner (running sandboxes write through it).
// Move-only; not thread-safe.
class LoopMount {
 public:
  // Mounts `image` (of `fs_type`, with mount(2) `flags` and `data`) at `target`, through the
  // loop device that already backs `image` when there is one — one file system mounted from
  // two devices at once would be corrupted — else through a new LoopDevice.
  static Result<LoopMount> Mount(const std::string& image, const std::string& target,
                                 const std::string& fs_type, unsigned long flags,
                                 const std::string& data);
  // Takes over an existing mount at `target` (one a previous owner released).
  static LoopMount Adopt(std::string target) { return LoopMount(std::move(target)); }

  LoopMount(LoopMount&& other) noexcept : target_(std::exchange(other.target_, "")) {}
  LoopMount& operator=(LoopMount&& other) noexcept;
  LoopMount(const LoopMount&) = delete;
  LoopMount& operator=(const LoopMount&) = delete;
  ~LoopMount() { Unmount().IgnoreError(); }

  const std::string& target() const { return target_; }
  // Unmounts now (MNT_DETACH). Ok when there is nothing to unmount.
  Status Unmount();
  // Leaves the mount in place; this object no longer owns it.
  void Release() { target_.clear(); }

 private:
  explicit LoopMount(std::string target) : target_(std::move(target)) {}
  std::string target_;  // empty: owns nothing
};

// The loop device (/dev/loopN) whose backing file is `image`, "" when none is.
std::string FindLoopDeviceOf(const std::string& image);

// The backing file of the loop device a mount's source names ("/dev/loop3" → the image), read
// from /sys/block/loopN/loop/backing_file; "" when `device` is not a bound loop device.
std::string LoopBackingFile(const std::string& device);

}  // namespace warren::os
