#include "census.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <optional>

#include "base/dir_names.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "os/mount.h"
#include "os/pidfd.h"

namespace warren::runtime::testing {

Census TakeCensus(const std::string& root) {
  Census c;
  auto mounts = os::ReadMountInfo();
  if (mounts.ok()) {
    for (const os::MountEntry& m : *mounts) {
      if (m.mount_point.rfind(root, 0) == 0) ++c.mounts;
    }
  }
  c.fds = base::DirNames("/proc/self/fd").size();
  return c;
}

std::set<uint64_t> NamespaceInodes(pid_t pid) {
  std::set<uint64_t> out;
  for (const std::string& ns : base::DirNames(fmt::format("/proc/{}/ns", pid))) {
    struct stat st;
    if (stat(fmt::format("/proc/{}/ns/{}", pid, ns).c_str(), &st) == 0) out.insert(st.st_ino);
  }
  return out;
}

uint64_t TicksSinceBoot() {
  auto up = base::ReadSmallFile("/proc/uptime");
  if (!up.ok()) return 0;
  double seconds = std::strtod(up->c_str(), nullptr);
  return static_cast<uint64_t>(seconds * static_cast<double>(sysconf(_SC_CLK_TCK)));
}

namespace {

// This process, its descendants, and processes in cgroups under `cgroup_parent`.
std::set<pid_t> Suspects(const std::string& cgroup_parent) {
  std::map<pid_t, pid_t> parent_of;
  std::set<pid_t> out = {getpid()};
  for (const std::string& p : base::DirNames("/proc")) {
    auto pid = base::ParseInt64(p);
    if (!pid) continue;
    auto stat = base::ReadSmallFile(fmt::format("/proc/{}/stat", *pid));
    if (stat.ok()) {
      size_t close = stat->rfind(')');
      auto fields = base::SplitNonEmpty(std::string_view(*stat).substr(close + 1), ' ');
      if (fields.size() > 1) {
        parent_of[static_cast<pid_t>(*pid)] =
            static_cast<pid_t>(base::ParseInt64(fields[1]).value_or(0));
      }
    }
    auto cgroups = base::ReadSmallFile(fmt::format("/proc/{}/cgroup", *pid));
    if (cgroups.ok() && cgroups->find("/" + cgroup_parent + "/") != std::string::npos) {
      out.insert(static_cast<pid_t>(*pid));
    }
  }
  for (const auto& [pid, ppid] : parent_of) {
    for (pid_t up = ppid; up > 1; up = parent_of.count(up) ? parent_of[up] : 0) {
      if (up == getpid()) {
        out.insert(pid);
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<pid_t> NamespaceHolders(const std::vector<NamespaceRecord>& records,
                                    const std::string& cgroup_parent) {
  std::vector<pid_t> holders;
  for (pid_t suspect : Suspects(cgroup_parent)) {
    std::optional<int64_t> pid = suspect;
    auto start = os::ProcessStartTime(static_cast<pid_t>(*pid));
    if (!start.ok()) continue;
    std::set<uint64_t> held = NamespaceInodes(static_cast<pid_t>(*pid));
    for (const std::string& fd : base::DirNames(fmt::format("/proc/{}/fd", *pid))) {
      char target[256];
      ssize_t n =
          readlink(fmt::format("/proc/{}/fd/{}", *pid, fd).c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      // nsfs fds read as "net:[4026532001]".
      std::string_view t(target);
      size_t open = t.find(":["), close = t.rfind(']');
      if (open == std::string_view::npos || close == std::string_view::npos) continue;
      if (auto ino = base::ParseUint64(t.substr(open + 2, close - open - 2))) held.insert(*ino);
    }
    bool holds = false;
    for (const NamespaceRecord& r : records) {
      if (*start >= r.alive_at) continue;
      for (uint64_t ino : held) holds = holds || r.inodes.count(ino) > 0;
    }
    if (holds) holders.push_back(static_cast<pid_t>(*pid));
  }
  return holders;
}

bool ProcessAlive(pid_t pid, uint64_t start_time) {
  auto st = os::ProcessStartTime(pid);
  return st.ok() && *st == start_time;
}

}  // namespace warren::runtime::testing
