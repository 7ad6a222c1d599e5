#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/spec.h"

namespace warren::bench {

// Runs the reference: Debian's runc with an OCI config equivalent to what the native runtime
// does (same namespaces, same busybox layer as an overlay with a per-container upper dir, same
// Docker default capabilities and seccomp profile, same masked/read-only paths, same cgroup
// limits, no_new_privs). Bench only. Not thread-safe.
class RuncDriver {
 public:
  RuncDriver(std::string work_dir, std::string layer, runtime::Resources resources);

  // Mounts the overlay, writes the bundle and runs `runc run --detach`: returns the host pid of
  // the container's init.
  Result<int> Run(const std::string& id, const std::vector<std::string>& args);
  // runc delete --force, unmount, remove the bundle.
  Status Delete(const std::string& id);
  Status Pause(const std::string& id);
  Status Resume(const std::string& id);
  // The container's memory cgroup usage (v1).
  Result<uint64_t> MemoryUsage(const std::string& id);

  static bool Available();
  // Removes the cgroup parent runc made for our containers (all hierarchies).
  void RemoveCgroupParent();

 private:
  Status Exec(const std::vector<std::string>& args);
  std::string Bundle(const std::string& id) const { return work_dir_ + "/bundle-" + id; }

  std::string work_dir_;
  std::string layer_;
  std::string root_;  // runc --root: its state, isolated from any other runc user
  std::string config_template_;
  std::string cgroup_parent_;  // "warren-bench-runc-<pid>"
};

}  // namespace warren::bench
