#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "os/namespace.h"

namespace warren::os {

// A user namespace fd that carries `uids`/`gids` and nothing else: the mapping source for
// idmapped mounts. Made by a short-lived helper child (clone3 CLONE_NEWUSER) whose maps are
// written, whose ns fd is opened, and which is then reaped. Needs root.
Result<base::UniqueFd> NewUserNamespaceFd(const IdMapping& uids, const IdMapping& gids);

// An idmapped mount of a directory, attached at `mount_point` (created if missing). Files owned
// by uid U on disk appear as owned by the id U maps to, so root-owned image layers look
// root-owned to a sandbox whose root is an unprivileged host uid, and overlayfs inside the
// sandbox's user namespace can copy them up. Owns the mount: the destructor detaches it and
// removes the mount point. Move-only; not thread-safe.
class IdmappedMount {
 public:
  static Result<IdmappedMount> Create(const std::string& source, const std::string& mount_point,
                                      int userns_fd);
  IdmappedMount() = default;
  IdmappedMount(IdmappedMount&& other) noexcept;
  IdmappedMount& operator=(IdmappedMount&& other) noexcept;
  IdmappedMount(const IdmappedMount&) = delete;
  IdmappedMount& operator=(const IdmappedMount&) = delete;
  ~IdmappedMount();

  const std::string& path() const { return mount_point_; }

 private:
  void Reset();
  std::string mount_point_;
};

}  // namespace warren::os
