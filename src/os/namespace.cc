#include "os/namespace.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/stat.h>

#include <cerrno>

#include "base/check.h"
#include "base/small_file.h"

namespace warren::os {

std::string_view NamespaceName(Namespace ns) {
  switch (ns) {
    case Namespace::kUser:
      return "user";
    case Namespace::kMount:
      return "mnt";
    case Namespace::kPid:
      return "pid";
    case Namespace::kUts:
      return "uts";
    case Namespace::kIpc:
      return "ipc";
    case Namespace::kNet:
      return "net";
    case Namespace::kCgroup:
      return "cgroup";
  }
  CHECK(false);
}

uint64_t NamespaceCloneFlag(Namespace ns) {
  switch (ns) {
    case Namespace::kUser:
      return CLONE_NEWUSER;
    case Namespace::kMount:
      return CLONE_NEWNS;
    case Namespace::kPid:
      return CLONE_NEWPID;
    case Namespace::kUts:
      return CLONE_NEWUTS;
    case Namespace::kIpc:
      return CLONE_NEWIPC;
    case Namespace::kNet:
      return CLONE_NEWNET;
    case Namespace::kCgroup:
      return CLONE_NEWCGROUP;
  }
  CHECK(false);
}

static std::string NsPath(pid_t pid, Namespace ns) {
  return fmt::format("/proc/{}/ns/{}", pid, NamespaceName(ns));
}

Result<base::UniqueFd> OpenNamespace(pid_t pid, Namespace ns) {
  std::string path = NsPath(pid, ns);
  base::UniqueFd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
  return fd;
}

Result<uint64_t> NamespaceInode(pid_t pid, Namespace ns) {
  std::string path = NsPath(pid, ns);
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", path), errno);
  return static_cast<uint64_t>(st.st_ino);
}

std::string FormatIdMapping(const IdMapping& m) {
  return fmt::format("{} {} {}\n", m.inside, m.outside, m.count);
}

Status WriteIdMappings(pid_t pid, const IdMapping& uids, const IdMapping& gids) {
  RETURN_IF_ERROR(
      base::WriteKernelFile(fmt::format("/proc/{}/uid_map", pid), FormatIdMapping(uids)));
  return base::WriteKernelFile(fmt::format("/proc/{}/gid_map", pid), FormatIdMapping(gids));
}

}  // namespace warren::os
