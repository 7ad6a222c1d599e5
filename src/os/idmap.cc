#include "os/idmap.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "os/clone.h"
#include "os/mount.h"
#include "os/pidfd.h"

namespace warren::os {
namespace {

struct HelperFds {
  int read_end;
  int write_end;
};

// The helper waits until the parent closes the pipe, then exits. It drops its own copy of the
// write end first, or it would never see EOF.
int WaitForParent(void* arg) noexcept {
  const auto* fds = static_cast<const HelperFds*>(arg);
  close(fds->write_end);
  char c;
  while (read(fds->read_end, &c, 1) < 0 && errno == EINTR) {
  }
  return 0;
}

}  // namespace

Result<base::UniqueFd> NewUserNamespaceFd(const IdMapping& uids, const IdMapping& gids) {
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) return ErrnoError("pipe", errno);
  base::UniqueFd read_end(p[0]), write_end(p[1]);
  HelperFds fds{read_end.get(), write_end.get()};
  CloneRequest req;
  req.namespaces = CLONE_NEWUSER;
  ASSIGN_OR_RETURN(ClonedProcess child, Clone(req, WaitForParent, &fds));
  Pidfd helper(child.pid, std::move(child.pidfd));
  Status st = WriteIdMappings(child.pid, uids, gids);
  Result<base::UniqueFd> ns =
      st.ok() ? OpenNamespace(child.pid, Namespace::kUser) : Result<base::UniqueFd>(st);
  // The namespace lives on through the fd; the helper may go.
  write_end.reset();
  if (!helper.WaitForExit(std::chrono::seconds(5)).ok()) helper.SendSignal(SIGKILL).IgnoreError();
  helper.WaitForExit(std::chrono::seconds(5)).IgnoreError();
  helper.TryReap().status().IgnoreError();
  return ns;
}

Result<IdmappedMount> IdmappedMount::Create(const std::string& source,
                                            const std::string& mount_point, int userns_fd) {
  int tree = open_tree(AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (tree < 0) return ErrnoError(fmt::format("open_tree {}", source), errno);
  base::UniqueFd tree_fd(tree);
  struct mount_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.attr_set = MOUNT_ATTR_IDMAP;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    return ErrnoError(fmt::format("idmap {}", source), errno);
  }
  if (mkdir(mount_point.c_str(), 0711) != 0 && errno != EEXIST) {
    return ErrnoError(fmt::format("mkdir {}", mount_point), errno);
  }
  Status st = AttachMountTree(tree, mount_point);
  if (!st.ok()) {
    rmdir(mount_point.c_str());
    return st;
  }
  IdmappedMount m;
  m.mount_point_ = mount_point;
  return m;
}

IdmappedMount::IdmappedMount(IdmappedMount&& other) noexcept
    : mount_point_(std::exchange(other.mount_point_, std::string())) {}

IdmappedMount& IdmappedMount::operator=(IdmappedMount&& other) noexcept {
  if (this != &other) {
    Reset();
    mount_point_ = std::exchange(other.mount_point_, std::string());
  }
  return *this;
}

IdmappedMount::~IdmappedMount() { Reset(); }

void IdmappedMount::Reset() {
  if (mount_point_.empty()) return;
  // Sandboxes that use the layer hold their own reference through their overlay, so
  // detaching the host's copy never disturbs them.
  umount2(mount_point_.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
  rmdir(mount_point_.c_str());
  mount_point_.clear();
}

}  // namespace warren::os
