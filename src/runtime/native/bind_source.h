#pragma once

#include <string>

#include "base/result.h"
#include "base/unique_fd.h"
#include "runtime/spec.h"

namespace warren::runtime::native {

// A bind mount's source as a detached mount tree, ready for the child to attach (ChildBind).
struct ResolvedBind {
  base::UniqueFd tree;
  bool is_dir = true;
};

// Resolves a bind mount's source on the host, at every Start, without following a symlink
// anything could have planted since Create: `source` (made canonical by Create) is opened
// with RESOLVE_NO_SYMLINKS, `sub_path` beneath it with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS;
// missing directories of sub_path are made one by one, each opened again the same way, with
// the source directory's mode and owner (as Kubernetes makes a subPath with its volume's
// mode; an emptyDir's owner is the sandbox's root). The tree is cloned from the resolved fd,
// nodev, and read-only when asked: what is mounted is what was resolved, never a path walked a
// second time. FailedPrecondition names the mount and the symlink; NotFound a missing source.
Result<ResolvedBind> ResolveBindSource(const BindMount& mount);

// The canonical form of a source at Create (realpath: host symlinks in an operator's path are
// resolved once, before the sandbox can write anything). NotFound when it does not exist.
Result<std::string> CanonicalBindSource(const std::string& source);

}  // namespace warren::runtime::native
