#pragma once

#include <sys/types.h>

#include <map>
#include <mutex>
#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "os/idmap.h"
#include "os/namespace.h"

namespace warren::runtime::native {

// One idmapped mount per image layer, shared by every user-namespaced sandbox (they all use
// the same mapping), kept for the life of the runtime: making one costs ~3 ms, reusing it
// nothing. Mounts live under `dir` in the host's mount namespace; sandboxes that use them
// hold their own references through their overlay, so the destructor may detach them while
// sandboxes run. Thread-safe.
class IdmapCache {
 public:
  IdmapCache(std::string dir, os::IdMapping uids, os::IdMapping gids);
  ~IdmapCache();
  IdmapCache(const IdmapCache&) = delete;
  IdmapCache& operator=(const IdmapCache&) = delete;

  // The path of the idmapped view of `layer`, creating it on first use.
  Result<std::string> Get(const std::string& layer);

  // Detaches leftovers of a previous run (a crashed server) under `dir`.
  static void Sweep(const std::string& dir);

 private:
  const std::string dir_;
  const os::IdMapping uids_;
  const os::IdMapping gids_;
  // A cached mount is valid only for the directory it was made of: a layer collected by the
  // image store's Gc() and unpacked again lives at the same path but is another inode.
  struct Entry {
    os::IdmappedMount mount;
    dev_t dev = 0;
    ino_t ino = 0;
  };
  std::mutex mu_;
  base::UniqueFd userns_;                // guarded by mu_
  std::map<std::string, Entry> mounts_;  // guarded by mu_; layer → mount
};

}  // namespace warren::runtime::native
