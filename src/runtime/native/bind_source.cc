#include "runtime/native/bind_source.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "base/strings.h"
#include "os/mount.h"

namespace warren::runtime::native {
namespace {

// Makes each missing directory of `sub_path` beneath `base`, never following a symlink:
// after each mkdirat the new directory is opened again beneath its parent (a racer that
// swapped it for a symlink is refused) and given `mode` and the owner through that fd.
Result<base::UniqueFd> MakeSubPath(int base, const std::string& sub_path, const struct stat& like) {
  base::UniqueFd parent(fcntl(base, F_DUPFD_CLOEXEC, 0));
  if (!parent) return ErrnoError("dup", errno);
  std::string done;
  for (std::string_view part : base::SplitNonEmpty(sub_path, '/')) {
    std::string name(part);
    done += (done.empty() ? "" : "/") + name;
    auto next = os::OpenBeneath(parent.get(), name);
    if (!next.ok() && next.status().code() == StatusCode::kNotFound) {
      bool made = mkdirat(parent.get(), name.c_str(), like.st_mode & 07777) == 0;
      if (!made && errno != EEXIST) return ErrnoError(fmt::format("mkdir {}", done), errno);
      // Whoever made it (we, or a racer that got there first), it must be a directory reached
      // without a symlink; only ours gets the volume's owner and mode (umask aside).
      ASSIGN_OR_RETURN(base::UniqueFd dir,
                       os::OpenBeneath(parent.get(), name, O_RDONLY | O_DIRECTORY));
      if (made && (fchown(dir.get(), like.st_uid, like.st_gid) != 0 ||
                   fchmod(dir.get(), like.st_mode & 07777) != 0)) {
        return ErrnoError(fmt::format("set owner and mode of {}", done), errno);
      }
      next = std::move(dir);
    }
    if (!next.ok()) return next.status().WithPrefix(done);
    parent = std::move(next).value();
  }
  return parent;
}

}  // namespace

Result<std::string> CanonicalBindSource(const std::string& source) {
  char buf[PATH_MAX];
  if (realpath(source.c_str(), buf) == nullptr) {
    if (errno == ENOENT || errno == ENOTDIR) {
      return NotFoundError(fmt::format("bind mount source {} does not exist", source));
    }
    return ErrnoError(fmt::format("resolve bind mount source {}", source), errno);
  }
  return std::string(buf);
}

Result<ResolvedBind> ResolveBindSource(const BindMount& m) {
  auto what = [&] {
    return m.sub_path.empty()
               ? fmt::format("bind mount source {}", m.source)
               : fmt::format("bind mount source {} subPath {}", m.source, m.sub_path);
  };
  auto base = os::OpenPathNoSymlinks(m.source);
  if (!base.ok()) return base.status().WithPrefix(what());
  base::UniqueFd resolved = std::move(base).value();
  if (!m.sub_path.empty()) {
    auto sub = os::OpenBeneath(resolved.get(), m.sub_path);
    if (!sub.ok() && sub.status().code() == StatusCode::kNotFound) {
      struct stat like;
      if (fstat(resolved.get(), &like) != 0) return ErrnoError(what(), errno);
      if (!S_ISDIR(like.st_mode)) {
        return FailedPreconditionError(what() + ": the source is not a directory");
      }
      sub = MakeSubPath(resolved.get(), m.sub_path, like);
    }
    if (!sub.ok()) return sub.status().WithPrefix(what());
    resolved = std::move(sub).value();
  }
  struct stat st;
  if (fstat(resolved.get(), &st) != 0) return ErrnoError(what(), errno);
  unsigned attrs = MOUNT_ATTR_NODEV | (m.read_only ? MOUNT_ATTR_RDONLY : 0);
  auto tree = os::CloneMountTreeAt(resolved.get(), attrs);
  if (!tree.ok()) return tree.status().WithPrefix(what());
  return ResolvedBind{std::move(tree).value(), S_ISDIR(st.st_mode)};
}

}  // namespace warren::runtime::native
