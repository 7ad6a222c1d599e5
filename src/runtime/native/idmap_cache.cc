#include "runtime/native/idmap_cache.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "base/encoding.h"

namespace warren::runtime::native {

IdmapCache::IdmapCache(std::string dir, os::IdMapping uids, os::IdMapping gids)
    : dir_(std::move(dir)), uids_(uids), gids_(gids) {}

IdmapCache::~IdmapCache() {
  std::lock_guard lock(mu_);
  mounts_.clear();  // each IdmappedMount detaches itself
}

void IdmapCache::Sweep(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::string path = dir + "/" + e->d_name;
    umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
    rmdir(path.c_str());
  }
  closedir(d);
}

Result<std::string> IdmapCache::Get(const std::string& layer) {
  std::lock_guard lock(mu_);
  struct stat st;
  if (stat(layer.c_str(), &st) != 0) return ErrnoError(fmt::format("stat layer {}", layer), errno);
  auto it = mounts_.find(layer);
  if (it != mounts_.end()) {
    if (it->second.dev == st.st_dev && it->second.ino == st.st_ino) return it->second.mount.path();
    mounts_.erase(it);  // the layer was replaced: detach the view of the old directory
  }
  if (!userns_) {
    auto ns = os::NewUserNamespaceFd(uids_, gids_);
    if (!ns.ok()) {
      return FailedPreconditionError("user namespaces are not usable here: " +
                                     ns.status().message());
    }
    userns_ = std::move(ns).value();
  }
  if (mkdir(dir_.c_str(), 0711) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", dir_), errno);
  }
  std::string mount_point = fmt::format("{}/{}", dir_, base::Sha256Hex(layer).substr(0, 32));
  auto m = os::IdmappedMount::Create(layer, mount_point, userns_.get());
  if (!m.ok()) {
    return FailedPreconditionError(
        fmt::format("idmapped mount of layer {} failed (needed for a user namespace): {}", layer,
                    m.status().message()));
  }
  std::string path = m->path();
  mounts_.emplace(layer, Entry{std::move(m).value(), st.st_dev, st.st_ino});
  return path;
}

}  // namespace warren::runtime::native
