#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace warren::os {

// The directories of one overlayfs mount.
struct OverlayLayers {
  // Read-only layers, the topmost first (the order of overlayfs' lowerdir).
  std::vector<std::string> lower_top_first;
  std::string upper;
  std::string work;  // on the same filesystem as upper, empty
  // Store overlay metadata in user.overlay.* xattrs: needed when mounting inside a user
  // namespace, where trusted.* xattrs cannot be written.
  bool userxattr = false;
  // MOUNT_ATTR_* flags of the mount (a sandbox's root: MOUNT_ATTR_NODEV).
  unsigned attrs = 0;
  // overlayfs "volatile": fsync and syncfs inside the mount do not reach the upper filesystem,
  // and neither does the unmount, which otherwise syncs the whole upper filesystem (a btrfs
  // transaction commit) each time a sandbox's mount namespace dies. For an upper layer that a
  // host crash makes worthless anyway; whoever keeps it across a stop syncs it (SyncUpper).
  // The kernel then refuses the same workdir until ClearVolatileMarker.
  bool volatile_upper = false;
};

// Checks that a layer is an existing directory: NotFound / FailedPrecondition naming it.
Status CheckLayerDir(const std::string& path);

// A volatile mount leaves work/incompat/volatile in its workdir, and the kernel refuses to mount
// that workdir again, since it cannot tell a clean unmount from a crash. The caller can: after
// a stop it synced (SyncUpper), or in the same boot, the upper layer is whole. Removes the
// marker (nothing when there is none); an unknown incompat feature beside it is left and named.
Status ClearVolatileMarker(const std::string& work);

// syncfs(2) of the filesystem that holds `upper`: what a volatile mount's unmount skipped.
Status SyncUpper(const std::string& upper);

// Mounts the overlay onto `target` (a host path in the caller's mount namespace) with the new
// mount API, adding each lower layer with "lowerdir+" so neither the number of layers nor
// characters such as ':' or ',' in their paths are limited by a one-page option string.
// Returns the mount's root fd, or -errno. Async-signal-safe (no allocation): runs in the
// sandbox's child before pivot_root.
int MountOverlayRaw(const OverlayLayers& layers, const char* target) noexcept;

}  // namespace warren::os
