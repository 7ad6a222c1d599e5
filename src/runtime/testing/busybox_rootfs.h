#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace warren::runtime::testing {

// A directory removed (with everything in it) when the object goes. Made with mode 0711 so a
// user-namespaced sandbox's root can walk through it. Move-only.
class TempDir {
 public:
  // mkdtemp under `parent` (default /tmp). CHECK-fails when that is impossible: tests only.
  explicit TempDir(const std::string& prefix = "warren-test", const std::string& parent = "/tmp");
  TempDir(TempDir&& other) noexcept;
  TempDir& operator=(TempDir&&) = delete;
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Builds a minimal image layer at `dir` (created): /bin/busybox (the static build from the
// busybox-static package) with a symlink per applet, /etc/passwd and /etc/group (root, nobody,
// user 1000), and empty /proc, /sys, /dev, /tmp (1777), /root, /home/user. Stands in for a real
// image until the image store exists. NotFound when /bin/busybox is not a static busybox.
Status MakeBusyboxLayer(const std::string& dir);

}  // namespace warren::runtime::testing
