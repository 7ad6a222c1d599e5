#pragma once

#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <string>

#include "base/check.h"

namespace warren::image::testing {

// Moves the test process into a private mount namespace once, so the overlays the tests mount
// vanish with the process even if a test crashes half way. Call before any thread starts.
inline bool EnterPrivateMountNamespace() {
  static const bool entered = [] {
    if (geteuid() != 0) return false;
    if (unshare(CLONE_NEWNS) != 0) return false;
    return mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0;
  }();
  return entered;
}

// An overlay mount, unmounted on destruction.
class OverlayMount {
 public:
  OverlayMount(const std::string& target, const std::string& options) : target_(target) {
    ok_ = mount("overlay", target.c_str(), "overlay", 0, options.c_str()) == 0;
    err_ = ok_ ? 0 : errno;
  }
  ~OverlayMount() {
    if (ok_) CHECK(umount2(target_.c_str(), MNT_DETACH) == 0);
  }
  OverlayMount(const OverlayMount&) = delete;
  OverlayMount& operator=(const OverlayMount&) = delete;
  bool ok() const { return ok_; }
  int error() const { return err_; }

 private:
  std::string target_;
  bool ok_ = false;
  int err_ = 0;
};

}  // namespace warren::image::testing
