#include "os/cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>
#include <thread>

#include "base/small_file.h"
#include "base/strings.h"
#include "os/device_policy.h"
#include "os/freezer.h"

namespace warren::os {
namespace {

constexpr auto kFreezeTimeoutForKill = std::chrono::seconds(2);

Status MkdirAll(const std::string& path, bool leaf_must_be_new) {
  // Components above the mount point exist; create from the first missing one down.
  std::vector<std::string> missing;
  std::string p = path;
  struct stat st;
  while (!p.empty() && stat(p.c_str(), &st) != 0) {
    if (errno != ENOENT) return ErrnoError(fmt::format("stat {}", p), errno);
    missing.push_back(p);
    p = p.substr(0, p.rfind('/'));
  }
  if (missing.empty() && leaf_must_be_new) {
    return AlreadyExistsError(fmt::format("cgroup {} already exists", path));
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    if (mkdir(it->c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(fmt::format("mkdir {}", *it), errno);
    }
  }
  return Status::Ok();
}

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

Result<std::vector<pid_t>> ReadProcs(const std::string& dir) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(dir + "/cgroup.procs", 16 << 20));
  std::vector<pid_t> pids;
  for (std::string_view line : base::SplitNonEmpty(text, '\n')) {
    if (auto v = base::ParseInt64(line)) pids.push_back(static_cast<pid_t>(*v));
  }
  return pids;
}

Result<uint64_t> ReadUint(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile(path));
  std::string_view t = base::TrimSpace(text);
  if (t == "max") return uint64_t{0};
  auto v = base::ParseUint64(t);
  if (!v) return InternalError(fmt::format("{}: not a number: '{}'", path, t));
  return *v;
}

}  // namespace

std::string_view CgroupVersionName(CgroupVersion v) {
  return v == CgroupVersion::kV1 ? "v1" : "v2";
}

Result<CgroupHierarchies> CgroupHierarchies::FromMounts(const std::vector<MountEntry>& mounts,
                                                        std::optional<CgroupVersion> prefer) {
  CgroupHierarchies h;
  for (const MountEntry& m : mounts) {
    if (m.fs_type == "cgroup2") {
      if (h.unified.empty()) h.unified = m.mount_point;
    } else if (m.fs_type == "cgroup") {
      for (std::string_view opt : base::Split(m.super_options, ',')) {
        for (std::string_view c : kV1Controllers) {
          if (opt == c && !h.v1.count(c)) h.v1.emplace(std::string(c), m.mount_point);
        }
      }
    }
  }
  bool has_v1 = h.v1.count("memory") > 0;
  h.version = prefer.value_or(has_v1 ? CgroupVersion::kV1 : CgroupVersion::kV2);
  if (h.version == CgroupVersion::kV2 && h.unified.empty()) {
    return FailedPreconditionError("cgroup v2 requested but no cgroup2 filesystem is mounted");
  }
  if (h.version == CgroupVersion::kV1) {
    for (std::string_view c : kV1Controllers) {
      if (!h.v1.count(c)) {
        return FailedPreconditionError(fmt::format("cgroup v1 controller '{}' is not mounted", c));
      }
    }
  }
  return h;
}

Result<CgroupHierarchies> CgroupHierarchies::Detect(std::optional<CgroupVersion> prefer) {
  ASSIGN_OR_RETURN(auto mounts, ReadMountInfo());
  return FromMounts(mounts, prefer);
}

std::vector<std::string> CgroupHierarchies::DirsFor(std::string_view relative) const {
  std::vector<std::string> out;
  if (version == CgroupVersion::kV2) {
    out.push_back(fmt::format("{}/{}", unified, relative));
    return out;
  }
  std::set<std::string> seen;
  for (std::string_view c : kV1Controllers) {
    auto it = v1.find(c);
    if (it == v1.end() || !seen.insert(it->second).second) continue;
    out.push_back(fmt::format("{}/{}", it->second, relative));
  }
  return out;
}

Result<Cgroup> Cgroup::Create(const CgroupHierarchies& h, std::string relative) {
  if (relative.empty() || relative.front() == '/' || relative.find("..") != std::string::npos) {
    return InvalidArgumentError(fmt::format("bad cgroup path '{}'", relative));
  }
  std::vector<std::string> created;
  for (const std::string& dir : h.DirsFor(relative)) {
    Status st = MkdirAll(dir, /*leaf_must_be_new=*/true);
    if (!st.ok()) {
      for (const std::string& made : created) rmdir(made.c_str());
      return st;
    }
    created.push_back(dir);
  }
  // From here on the destructor removes the group if a later step fails.
  Cgroup cg(h, relative);
  if (h.version == CgroupVersion::kV2) {
    // Delegate whatever controllers the root offers down to the sandbox's parent, so memory,
    // cpu and pids files appear in the group where the hierarchy allows it.
    auto offered = base::ReadSmallFile(h.unified + "/cgroup.controllers");
    if (offered.ok()) {
      std::string enable;
      for (std::string_view c : base::SplitNonEmpty(*offered, ' ')) {
        if (c == "memory" || c == "cpu" || c == "pids") enable += fmt::format("+{} ", c);
      }
      if (!enable.empty()) {
        std::string dir = h.unified;
        for (std::string_view part : base::SplitNonEmpty(relative, '/')) {
          base::WriteKernelFile(dir + "/cgroup.subtree_control", enable).IgnoreError();
          dir += "/" + std::string(part);
        }
      }
    }
  }
  return cg;
}

Result<Cgroup> Cgroup::Open(const CgroupHierarchies& h, std::string relative) {
  bool any = false;
  for (const std::string& dir : h.DirsFor(relative)) any = any || Exists(dir);
  if (!any) return NotFoundError(fmt::format("cgroup {} does not exist", relative));
  return Cgroup(h, std::move(relative));
}

Cgroup::Cgroup(Cgroup&& other) noexcept
    : h_(std::move(other.h_)), relative_(std::exchange(other.relative_, std::string())) {}

Cgroup& Cgroup::operator=(Cgroup&& other) noexcept {
  if (this != &other) {
    if (!relative_.empty()) Remove(std::chrono::seconds(5)).IgnoreError();
    h_ = std::move(other.h_);
    relative_ = std::exchange(other.relative_, std::string());
  }
  return *this;
}

Cgroup::~Cgroup() {
  if (!relative_.empty()) Remove(std::chrono::seconds(5)).IgnoreError();
}

std::string Cgroup::V1Dir(std::string_view controller) const {
  auto it = h_.v1.find(controller);
  return it == h_.v1.end() ? std::string() : fmt::format("{}/{}", it->second, relative_);
}

std::string Cgroup::UnifiedDir() const { return fmt::format("{}/{}", h_.unified, relative_); }

Status Cgroup::SetCpuWeight(int weight) {
  if (weight < kMinCpuWeight || weight > kMaxCpuWeight) {
    return InvalidArgumentError(
        fmt::format("cpu weight {} is outside {}-{}", weight, kMinCpuWeight, kMaxCpuWeight));
  }
  if (h_.version == CgroupVersion::kV1) {
    std::string dir = V1Dir("cpu");
    if (dir.empty()) return Status::Ok();
    // cpu.shares' floor is 2; 100 maps to the v1 default of 1024.
    int64_t shares = std::max<int64_t>(2, int64_t{weight} * 1024 / kDefaultCpuWeight);
    return base::WriteKernelFile(dir + "/cpu.shares", std::to_string(shares));
  }
  std::string file = UnifiedDir() + "/cpu.weight";
  if (!Exists(file)) return Status::Ok();
  return base::WriteKernelFile(file, std::to_string(weight));
}

Status Cgroup::SetLimits(const CgroupLimits& limits) {
  if (limits.cpu_weight != 0) RETURN_IF_ERROR(SetCpuWeight(limits.cpu_weight));
  if (h_.version == CgroupVersion::kV1) {
    if (limits.cpu_quota_us > 0) {
      std::string dir = V1Dir("cpu");
      RETURN_IF_ERROR(
          base::WriteKernelFile(dir + "/cpu.cfs_period_us", std::to_string(limits.cpu_period_us)));
      RETURN_IF_ERROR(
          base::WriteKernelFile(dir + "/cpu.cfs_quota_us", std::to_string(limits.cpu_quota_us)));
    }
    if (limits.memory_bytes > 0) {
      std::string dir = V1Dir("memory");
      std::string v = std::to_string(limits.memory_bytes);
      // memory+swap at the same value: the sandbox may not swap past its limit. Absent when
      // swap accounting is off, which is fine. The kernel keeps memory+swap >= memory, so a
      // raise (an in-place resize) writes memory+swap first and a cut writes it last.
      const std::string memsw = dir + "/memory.memsw.limit_in_bytes";
      const bool has_memsw = Exists(memsw);
      auto current = ReadUint(dir + "/memory.limit_in_bytes");
      const bool raising = current.ok() && static_cast<uint64_t>(limits.memory_bytes) > *current;
      if (has_memsw && raising) RETURN_IF_ERROR(base::WriteKernelFile(memsw, v));
      RETURN_IF_ERROR(base::WriteKernelFile(dir + "/memory.limit_in_bytes", v));
      if (has_memsw && !raising) RETURN_IF_ERROR(base::WriteKernelFile(memsw, v));
    }
    if (limits.pids > 0) {
      RETURN_IF_ERROR(
          base::WriteKernelFile(V1Dir("pids") + "/pids.max", std::to_string(limits.pids)));
    }
    if (limits.restrict_devices) {
      std::string dir = V1Dir("devices");
      RETURN_IF_ERROR(base::WriteKernelFile(dir + "/devices.deny", "a"));
      for (const DeviceRule& rule : DefaultDeviceRules()) {
        RETURN_IF_ERROR(base::WriteKernelFile(dir + "/devices.allow", DeviceRuleText(rule)));
      }
    }
    return Status::Ok();
  }
  std::string dir = UnifiedDir();
  auto need = [&](std::string_view file, std::string_view controller) -> Status {
    if (Exists(fmt::format("{}/{}", dir, file))) return Status::Ok();
    auto enabled = base::ReadSmallFile(dir + "/cgroup.controllers");
    return FailedPreconditionError(
        fmt::format("cgroup v2 controller '{}' is not available in {} (enabled: '{}')", controller,
                    dir, enabled.ok() ? std::string(base::TrimSpace(*enabled)) : std::string("?")));
  };
  if (limits.cpu_quota_us > 0) {
    RETURN_IF_ERROR(need("cpu.max", "cpu"));
    RETURN_IF_ERROR(base::WriteKernelFile(
        dir + "/cpu.max", fmt::format("{} {}", limits.cpu_quota_us, limits.cpu_period_us)));
  }
  if (limits.memory_bytes > 0) {
    RETURN_IF_ERROR(need("memory.max", "memory"));
    RETURN_IF_ERROR(
        base::WriteKernelFile(dir + "/memory.max", std::to_string(limits.memory_bytes)));
    if (Exists(dir + "/memory.swap.max")) {
      RETURN_IF_ERROR(base::WriteKernelFile(dir + "/memory.swap.max", "0"));
    }
  }
  if (limits.pids > 0) {
    RETURN_IF_ERROR(need("pids.max", "pids"));
    RETURN_IF_ERROR(base::WriteKernelFile(dir + "/pids.max", std::to_string(limits.pids)));
  }
  if (limits.restrict_devices) {
    // v2 has no devices controller: the policy is a BPF program on the group, which needs no
    // controller to be enabled (it works on this host's empty unified hierarchy too).
    ASSIGN_OR_RETURN(int program, DefaultDeviceProgram());
    ASSIGN_OR_RETURN(base::UniqueFd group, OpenUnifiedDir());
    RETURN_IF_ERROR(AttachDeviceProgram(group.get(), program).WithPrefix(dir));
  }
  return Status::Ok();
}

Result<std::vector<base::UniqueFd>> Cgroup::OpenTaskFiles() const {
  if (h_.version != CgroupVersion::kV1) {
    return FailedPreconditionError("tasks files are cgroup v1's; v2 uses CLONE_INTO_CGROUP");
  }
  std::vector<base::UniqueFd> fds;
  for (const std::string& dir : Dirs()) {
    std::string path = dir + "/tasks";
    base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (!fd) return ErrnoError(fmt::format("open {}", path), errno);
    fds.push_back(std::move(fd));
  }
  return fds;
}

int WriteSelfToTaskFile(int fd) noexcept {
  ssize_t n;
  do {
    n = write(fd, "0", 1);
  } while (n < 0 && errno == EINTR);
  return n == 1 ? 0 : -1;
}

Result<base::UniqueFd> Cgroup::OpenUnifiedDir() const {
  if (h_.version != CgroupVersion::kV2) {
    return FailedPreconditionError("CLONE_INTO_CGROUP needs cgroup v2");
  }
  std::string dir = UnifiedDir();
  base::UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return ErrnoError(fmt::format("open {}", dir), errno);
  return fd;
}

Status Cgroup::Freeze(std::chrono::milliseconds timeout) {
  return h_.version == CgroupVersion::kV1 ? SetFrozenV1(V1Dir("freezer"), true, timeout)
                                          : SetFrozenV2(UnifiedDir(), true, timeout);
}

Status Cgroup::Thaw(std::chrono::milliseconds timeout) {
  return h_.version == CgroupVersion::kV1 ? SetFrozenV1(V1Dir("freezer"), false, timeout)
                                          : SetFrozenV2(UnifiedDir(), false, timeout);
}

Result<bool> Cgroup::IsFrozen() const {
  return h_.version == CgroupVersion::kV1 ? IsFrozenV1(V1Dir("freezer")) : IsFrozenV2(UnifiedDir());
}

std::optional<uint64_t> FlatKeyedValue(std::string_view text, std::string_view key) {
  for (std::string_view line : base::Split(text, '\n')) {
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.substr(0, sp) != key) continue;
    return base::ParseUint64(base::TrimSpace(line.substr(sp + 1)));
  }
  return std::nullopt;
}

Result<uint64_t> Cgroup::CpuUsageNs() const {
  if (h_.version == CgroupVersion::kV1) return ReadUint(V1Dir("cpuacct") + "/cpuacct.usage");
  ASSIGN_OR_RETURN(std::string cpu, base::ReadSmallFile(UnifiedDir() + "/cpu.stat"));
  return FlatKeyedValue(cpu, "usage_usec").value_or(0) * 1000;
}

Result<CgroupStats> Cgroup::Stats() const {
  CgroupStats s;
  if (h_.version == CgroupVersion::kV1) {
    ASSIGN_OR_RETURN(s.cpu_usage_ns, ReadUint(V1Dir("cpuacct") + "/cpuacct.usage"));
    std::string mem = V1Dir("memory");
    s.has_memory = true;
    ASSIGN_OR_RETURN(s.memory_bytes, ReadUint(mem + "/memory.usage_in_bytes"));
    ASSIGN_OR_RETURN(uint64_t limit, ReadUint(mem + "/memory.limit_in_bytes"));
    // v1 reports "no limit" as a huge page-rounded number.
    s.memory_limit_bytes = limit >= (uint64_t{1} << 62) ? 0 : limit;
    ASSIGN_OR_RETURN(std::string stat, base::ReadSmallFile(mem + "/memory.stat"));
    uint64_t inactive = FlatKeyedValue(stat, "total_inactive_file").value_or(0);
    s.memory_working_set_bytes = s.memory_bytes > inactive ? s.memory_bytes - inactive : 0;
    ASSIGN_OR_RETURN(std::string oom, base::ReadSmallFile(mem + "/memory.oom_control"));
    s.oom_kills = FlatKeyedValue(oom, "oom_kill").value_or(0);
    ASSIGN_OR_RETURN(s.pids, ReadUint(V1Dir("pids") + "/pids.current"));
    return s;
  }
  std::string dir = UnifiedDir();
  ASSIGN_OR_RETURN(std::string cpu, base::ReadSmallFile(dir + "/cpu.stat"));
  s.cpu_usage_ns = FlatKeyedValue(cpu, "usage_usec").value_or(0) * 1000;
  if (Exists(dir + "/memory.current")) {
    s.has_memory = true;
    ASSIGN_OR_RETURN(s.memory_bytes, ReadUint(dir + "/memory.current"));
    ASSIGN_OR_RETURN(s.memory_limit_bytes, ReadUint(dir + "/memory.max"));
    ASSIGN_OR_RETURN(std::string stat, base::ReadSmallFile(dir + "/memory.stat"));
    uint64_t inactive = FlatKeyedValue(stat, "inactive_file").value_or(0);
    s.memory_working_set_bytes = s.memory_bytes > inactive ? s.memory_bytes - inactive : 0;
    ASSIGN_OR_RETURN(std::string events, base::ReadSmallFile(dir + "/memory.events"));
    s.oom_kills = FlatKeyedValue(events, "oom_kill").value_or(0);
  }
  if (Exists(dir + "/pids.current")) {
    ASSIGN_OR_RETURN(s.pids, ReadUint(dir + "/pids.current"));
  } else {
    ASSIGN_OR_RETURN(std::string threads, base::ReadSmallFile(dir + "/cgroup.threads", 16 << 20));
    s.pids = base::SplitNonEmpty(threads, '\n').size();
  }
  return s;
}

Result<std::vector<pid_t>> Cgroup::Pids() const {
  std::set<pid_t> all;
  for (const std::string& dir : Dirs()) {
    auto pids = ReadProcs(dir);
    if (!pids.ok()) {
      if (pids.status().code() == StatusCode::kNotFound) continue;
      return pids.status();
    }
    all.insert(pids->begin(), pids->end());
  }
  return std::vector<pid_t>(all.begin(), all.end());
}

Status Cgroup::KillAll() {
  if (h_.version == CgroupVersion::kV2 && Exists(UnifiedDir() + "/cgroup.kill")) {
    RETURN_IF_ERROR(base::WriteKernelFile(UnifiedDir() + "/cgroup.kill", "1"));
  } else {
    ASSIGN_OR_RETURN(std::vector<pid_t> pids, Pids());
    for (pid_t pid : pids) kill(pid, SIGKILL);
  }
  // A frozen task does not act on SIGKILL under the v1 freezer until it is thawed.
  auto frozen = IsFrozen();
  if (frozen.ok() && *frozen) return Thaw(kFreezeTimeoutForKill);
  if (h_.version == CgroupVersion::kV1) {
    // FREEZING (half frozen) also needs a thaw.
    auto state = base::ReadSmallFile(V1Dir("freezer") + "/freezer.state");
    if (state.ok() && base::TrimSpace(*state) != "THAWED") return Thaw(kFreezeTimeoutForKill);
  }
  return Status::Ok();
}

Status Cgroup::Remove(std::chrono::milliseconds timeout) {
  if (relative_.empty()) return Status::Ok();
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> dirs = Dirs();
  bool killed = false;
  auto nap = std::chrono::microseconds(100);
  for (;;) {
    bool busy = false;
    for (const std::string& dir : dirs) {
      if (rmdir(dir.c_str()) == 0 || errno == ENOENT) continue;
      if (errno != EBUSY) return ErrnoError(fmt::format("rmdir {}", dir), errno);
      busy = true;
    }
    if (!busy) break;
    if (!killed) {
      KillAll().IgnoreError();
      killed = true;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      auto pids = Pids();
      return DeadlineExceededError(
          fmt::format("cgroup {} still busy after {} ms ({} processes left)", relative_,
                      timeout.count(), pids.ok() ? pids->size() : 0));
    }
    std::this_thread::sleep_for(nap);
    nap = std::min<std::chrono::microseconds>(nap * 2, std::chrono::milliseconds(10));
    // Processes may have been added meanwhile (a racing exec into the sandbox): kill again.
    KillAll().IgnoreError();
  }
  relative_.clear();
  return Status::Ok();
}

Result<std::vector<std::string>> ListCgroupChildren(const CgroupHierarchies& h,
                                                    std::string_view parent) {
  std::set<std::string> names;
  for (const std::string& dir : h.DirsFor(parent)) {
    DIR* d = opendir(dir.c_str());
    if (d == nullptr) {
      if (errno == ENOENT) continue;
      return ErrnoError(fmt::format("opendir {}", dir), errno);
    }
    while (dirent* e = readdir(d)) {
      if (e->d_type == DT_DIR && e->d_name[0] != '.') names.insert(e->d_name);
    }
    closedir(d);
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace warren::os
