#include "runtime/native/native_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <new>

#include "base/log.h"
#include "base/scope_guard.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "os/capabilities.h"
#include "os/mount.h"
#include "os/netns.h"
#include "os/overlay.h"
#include "os/seccomp.h"
#include "runtime/native/bind_source.h"
#include "runtime/native/dir_tree.h"
#include "runtime/native/launcher.h"

namespace warren::runtime::native {
namespace {

constexpr const char* kDefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
constexpr auto kExecTimeout = std::chrono::seconds(30);

auto Log() {
  static auto logger = base::Logger("runtime");
  return logger;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

Status MkdirAllModes(const std::string& path, mode_t mode) {
  std::string p;
  for (std::string_view part : base::SplitNonEmpty(path, '/')) {
    p += "/" + std::string(part);
    if (mkdir(p.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoError(fmt::format("mkdir {}", p), errno);
    }
  }
  return Status::Ok();
}

// In a user namespace the sandbox's root is an unprivileged host uid: it must be able to walk
// to its upper dir and its rootfs mount point.
Status CheckSearchableByOthers(const std::string& path, const std::string& id) {
  std::string p;
  const std::string parent = Parent(path);  // outlives the views Split returns
  for (std::string_view part : base::SplitNonEmpty(parent, '/')) {
    p += "/" + std::string(part);
    struct stat st;
    if (stat(p.c_str(), &st) != 0) return ErrnoError(fmt::format("stat {}", p), errno);
    if (!(st.st_mode & S_IXOTH)) {
      return FailedPreconditionError(fmt::format(
          "sandbox {}: {} (mode {:o}) is not searchable by the user namespace's uids; make it "
          "o+x (e.g. 0711)",
          id, p, st.st_mode & 07777));
    }
  }
  return Status::Ok();
}

std::vector<std::string> ExecCandidates(const SandboxSpec& spec) {
  const std::string& cmd = spec.command[0];
  if (cmd.find('/') != std::string::npos) return {cmd};
  std::string path = kDefaultPath;
  for (const std::string& kv : spec.env) {
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  }
  std::vector<std::string> out;
  for (std::string_view dir : base::Split(path, ':')) {
    out.push_back(fmt::format("{}/{}", dir.empty() ? "." : dir, cmd));
  }
  return out;
}

os::CgroupLimits LimitsFor(const Resources& r) {
  os::CgroupLimits l;
  l.cpu_period_us = 100000;
  l.cpu_quota_us = r.cpu_millicores * l.cpu_period_us / 1000;
  l.memory_bytes = r.memory_bytes;
  l.pids = r.pids;
  return l;
}

Status LimitError(const Status& st, const std::string& id) {
  if (st.code() == StatusCode::kInvalidArgument || st.code() == StatusCode::kOutOfRange) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: limit refused by the kernel: {}", id, st.message()));
  }
  return st.WithPrefix(fmt::format("sandbox {}: cgroup limits", id));
}

// Whether `pid` is in `cgroup` (true when the sandbox has no cgroup to check against).
bool InItsCgroup(const os::Cgroup& cgroup, pid_t pid) {
  if (cgroup.relative().empty()) return true;
  auto pids = cgroup.Pids();
  return pids.ok() && std::find(pids->begin(), pids->end(), pid) != pids->end();
}

Status NoSandboxNetwork(std::string_view id) {
  return FailedPreconditionError(fmt::format(
      "sandbox {}: asks for a network link out, and this node has no sandbox network", id));
}

}  // namespace

Result<std::unique_ptr<NativeRuntime>> NativeRuntime::Create(NativeRuntimeOptions options) {
  if (geteuid() != 0) return FailedPreconditionError("the native runtime needs root");
  if (options.state_dir.empty() || options.state_dir.front() != '/') {
    return InvalidArgumentError("state_dir must be an absolute path");
  }
  if (options.cgroup_parent.empty() || options.cgroup_parent.front() == '/' ||
      options.cgroup_parent.find("..") != std::string::npos) {
    return InvalidArgumentError("cgroup_parent must be a relative path without '..'");
  }
  if (options.userns_size == 0 ||
      uint64_t{options.userns_host_id} + options.userns_size > uint64_t{UINT32_MAX}) {
    return InvalidArgumentError("user namespace id range does not fit in 32 bits");
  }
  ASSIGN_OR_RETURN(auto hierarchies, os::CgroupHierarchies::Detect(options.cgroup_version));
  ASSIGN_OR_RETURN(int last_cap, os::LastCapability());
  ASSIGN_OR_RETURN(os::Rlimit nofile, os::CurrentRlimit(RLIMIT_NOFILE));
  RETURN_IF_ERROR(MkdirAllModes(options.state_dir, 0711));
  // Compile the seccomp profile now: a broken libseccomp shows at startup, and the first
  // sandbox does not pay for it.
  ASSIGN_OR_RETURN(const os::SeccompProgram* seccomp, os::DockerDefaultSeccompProgram());
  (void)seccomp;
  std::string idmap_dir = options.state_dir + "/.idmap";
  IdmapCache::Sweep(idmap_dir);

  uint32_t nofile_hard = static_cast<uint32_t>(std::min<uint64_t>(nofile.hard, uint64_t{1} << 20));
  std::unique_ptr<NativeRuntime> rt(
      new NativeRuntime(std::move(options), std::move(hierarchies), last_cap, nofile_hard));
  os::IdMapping ids{0, rt->options_.userns_host_id, rt->options_.userns_size};
  rt->idmaps_ = std::make_unique<IdmapCache>(idmap_dir, ids, ids);
  NativeRuntime* raw = rt.get();
  ASSIGN_OR_RETURN(rt->reaper_,
                   Reaper::Start([raw](const std::string& id) { raw->OnProcessExit(id); }));
  Log()->info("native runtime ready state_dir={} cgroup={} parent={}", rt->options_.state_dir,
              os::CgroupVersionName(rt->hierarchies_.version), rt->options_.cgroup_parent);
  return rt;
}

NativeRuntime::NativeRuntime(NativeRuntimeOptions options, os::CgroupHierarchies hierarchies,
                             int last_cap, uint32_t nofile_hard)
    : options_(std::move(options)),
      hierarchies_(std::move(hierarchies)),
      last_cap_(last_cap),
      nofile_hard_(nofile_hard),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock()) {}

NativeRuntime::~NativeRuntime() {
  // Stop watching first, so no exit is processed while the records go away.
  reaper_.reset();
  // Lock order everywhere is sandbox, then table: take the entries out first.
  std::map<std::string, SandboxPtr, std::less<>> all;
  {
    std::lock_guard lock(table_mu_);
    all.swap(table_);
  }
  for (auto& [id, sb] : all) {
    std::lock_guard sb_lock(sb->mu);
    // Sandboxes outlive the runtime: keep their cgroups; closing the pidfd does not touch
    // the process.
    sb->cgroup.Release();
    sb->process.reset();
    sb->dial_pidfd.reset();
  }
}

std::string NativeRuntime::SandboxDir(std::string_view id) const {
  return fmt::format("{}/{}", options_.state_dir, id);
}

std::string NativeRuntime::CgroupPath(std::string_view id) const {
  return fmt::format("{}/{}", options_.cgroup_parent, id);
}

Result<NativeRuntime::SandboxPtr> NativeRuntime::Find(std::string_view id) {
  std::lock_guard lock(table_mu_);
  auto it = table_.find(id);
  if (it == table_.end()) return NotFoundError(fmt::format("sandbox {} not found", id));
  return it->second;
}

std::optional<sbnet::Attachment> NativeRuntime::EgressOf(const SandboxRecord& r) {
  if (r.egress_address.empty()) return std::nullopt;
  auto address = os::ParseIpv4(r.egress_address);
  if (!address.ok()) return std::nullopt;
  return sbnet::Attachment{*address, r.egress_link};
}

std::optional<os::Ipv4> NativeRuntime::EgressAddressInside(int pid) {
  base::UniqueFd ns(open(fmt::format("/proc/{}/ns/net", pid).c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) return std::nullopt;
  auto inside = os::RouteNetlink::OpenInNetns(ns.get());
  if (!inside.ok()) return std::nullopt;
  auto address = inside->LinkAddress("eth0");
  return address.ok() ? *address : std::nullopt;
}

void NativeRuntime::DetachEgressLocked(Sandbox& sb) {
  auto a = EgressOf(sb.record);
  if (a) sb.last_address = a->address;
  if (a && options_.network != nullptr) options_.network->Detach(*a);
  sb.record.egress_address.clear();
  sb.record.egress_link.clear();
}

Status NativeRuntime::UpdateEgress(std::string_view id, const sbnet::EgressPolicy& policy) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (!sb->record.spec.egress) {
    return FailedPreconditionError(
        fmt::format("sandbox {} has no network link out to set a policy on", id));
  }
  if (auto a = EgressOf(sb->record); a && options_.network != nullptr) {
    RETURN_IF_ERROR(
        options_.network->SetPolicy(a->address, policy).WithPrefix(fmt::format("sandbox {}", id)));
  }
  sb->record.spec.egress_policy = policy;
  return Persist(*sb);
}

Status NativeRuntime::Persist(const Sandbox& sb) {
  return base::WriteFileAtomically(SandboxDir(sb.record.spec.id) + "/state.json",
                                   EncodeRecord(sb.record));
}

SandboxInfo NativeRuntime::InfoLocked(const Sandbox& sb) const {
  SandboxInfo info;
  info.id = sb.record.spec.id;
  info.state = sb.record.state;
  info.pid = sb.process ? sb.process->pid() : 0;
  info.user_namespace = sb.record.spec.user_namespace;
  info.created_at = sb.record.created_at;
  info.started_at = sb.record.started_at;
  info.last_exit = sb.record.last_exit;
  info.address = sb.record.egress_address;
  return info;
}

void NativeRuntime::SetExitCallback(ExitCallback callback) {
  std::lock_guard lock(callback_mu_);
  on_exit_ = std::move(callback);
}

void NativeRuntime::NotifyExit(const std::string& id, const std::optional<ExitStatus>& exit) {
  if (!exit) return;
  ExitCallback cb;
  {
    std::lock_guard lock(callback_mu_);
    cb = on_exit_;
  }
  if (cb) cb(id, *exit);
}

std::optional<ExitStatus> NativeRuntime::CollectExitLocked(Sandbox& sb) {
  if (!sb.process || !sb.process->HasExited()) return std::nullopt;
  const std::string& id = sb.record.spec.id;
  reaper_->Unwatch(id);
  ExitStatus exit;
  auto reaped = sb.process->TryReap();
  if (reaped.ok() && reaped->has_value()) {
    exit.exit_code = (*reaped)->exit_code;
    exit.signal = (*reaped)->signal;
  } else {
    // Not our child (adopted after a restart): its new parent reaps it and keeps the status.
    exit.unknown = true;
  }
  if (!sb.cgroup.relative().empty()) {
    auto stats = sb.cgroup.Stats();
    if (stats.ok() && stats->oom_kills > sb.record.oom_kills_at_start) exit.oom_killed = true;
  }
  sb.process.reset();
  sb.dial_pidfd.reset();
  DetachEgressLocked(sb);
  sb.record.state = SandboxState::kStopped;
  sb.record.pid = 0;
  sb.record.start_time = 0;
  sb.record.last_exit = exit;
  Status st = Persist(sb);
  if (!st.ok()) Log()->warn("persist sandbox={} error={}", id, st.ToString());
  Log()->info("sandbox exited id={} code={} signal={} oom={}", id, exit.exit_code, exit.signal,
              exit.oom_killed);
  return exit;
}

void NativeRuntime::OnProcessExit(const std::string& id) {
  auto found = Find(id);
  if (!found.ok()) return;
  SandboxPtr sb = *found;
  std::optional<ExitStatus> exit;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return;
    exit = CollectExitLocked(*sb);
  }
  NotifyExit(id, exit);
}

Status NativeRuntime::Create(const SandboxSpec& spec) {
  auto t0 = std::chrono::steady_clock::now();
  RETURN_IF_ERROR(ValidateSpec(spec));
  const std::string& id = spec.id;
  if (spec.egress && options_.network == nullptr) return NoSandboxNetwork(id);
  if (!spec.restore_image.empty()) {
    return FailedPreconditionError(fmt::format(
        "sandbox {}: the native runtime cannot restore processes from a memory image", id));
  }
  RETURN_IF_ERROR(CheckUserInRange(spec));
  for (const std::string& layer : spec.layers) {
    RETURN_IF_ERROR(os::CheckLayerDir(layer).WithPrefix("sandbox " + id));
  }
  // Sources are resolved once here, following the host's symlinks as the caller meant them;
  // every Start then opens the canonical path without following any (bind_source.h).
  SandboxSpec canonical = spec;
  for (BindMount& m : canonical.mounts) {
    auto source = CanonicalBindSource(m.source);
    if (!source.ok()) return source.status().WithPrefix("sandbox " + id);
    m.source = std::move(source).value();
  }
  if (!Exists(Parent(spec.writable_dir))) {
    return NotFoundError(
        fmt::format("sandbox {}: parent of writable_dir {} does not exist", id, spec.writable_dir));
  }
  if (!spec.log_path.empty() && !Exists(Parent(spec.log_path))) {
    return NotFoundError(
        fmt::format("sandbox {}: directory of log_path {} does not exist", id, spec.log_path));
  }

  // Reserve the id; the entry stays locked until it is complete.
  auto sb = std::make_shared<Sandbox>();
  std::unique_lock sb_lock(sb->mu);
  {
    std::lock_guard lock(table_mu_);
    if (table_.count(id)) return AlreadyExistsError(fmt::format("sandbox {} already exists", id));
    table_.emplace(id, sb);
  }
  auto unreserve = base::ScopeExit([&] {
    sb->gone = true;
    std::lock_guard lock(table_mu_);
    table_.erase(id);
  });

  std::string dir = SandboxDir(id);
  if (mkdir(dir.c_str(), 0711) != 0) {
    if (errno == EEXIST) {
      return AlreadyExistsError(fmt::format(
          "sandbox {}: {} exists (a sandbox of that id is still on this node: adopt it or "
          "remove the orphan)",
          id, dir));
    }
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, dir), errno);
  }
  auto remove_dir = base::ScopeExit([&] { RemoveTree(dir).IgnoreError(); });
  if (mkdir((dir + "/rootfs").c_str(), 0755) != 0) {
    return ErrnoError(fmt::format("sandbox {}: mkdir rootfs", id), errno);
  }

  bool created_writable = mkdir(spec.writable_dir.c_str(), 0711) == 0;
  if (!created_writable && errno != EEXIST) {
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, spec.writable_dir), errno);
  }
  std::string upper = spec.writable_dir + "/upper", work = spec.writable_dir + "/work";
  bool created_upper = false, created_work = false;
  auto remove_writable = base::ScopeExit([&] {
    if (created_writable) {
      RemoveTree(spec.writable_dir).IgnoreError();
      return;
    }
    if (created_upper) RemoveTree(upper).IgnoreError();
    if (created_work) RemoveTree(work).IgnoreError();
  });
  created_upper = mkdir(upper.c_str(), 0755) == 0;
  if (!created_upper && errno != EEXIST) {
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, upper), errno);
  }
  created_work = mkdir(work.c_str(), 0755) == 0;
  if (!created_work && errno != EEXIST) {
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, work), errno);
  }
  if (spec.user_namespace) {
    uid_t host_root = options_.userns_host_id;
    for (const std::string& p : {upper, work}) {
      if (lchown(p.c_str(), host_root, host_root) != 0) {
        return ErrnoError(fmt::format("sandbox {}: chown {}", id, p), errno);
      }
    }
    RETURN_IF_ERROR(CheckSearchableByOthers(upper, id));
    RETURN_IF_ERROR(CheckSearchableByOthers(dir + "/rootfs", id));
    for (const std::string& layer : spec.layers) {
      auto mapped = idmaps_->Get(layer);
      if (!mapped.ok()) return mapped.status().WithPrefix("sandbox " + id);
    }
  }

  auto cgroup = os::Cgroup::Create(hierarchies_, CgroupPath(id));
  if (!cgroup.ok()) {
    if (cgroup.status().code() == StatusCode::kAlreadyExists) {
      return AlreadyExistsError(fmt::format(
          "sandbox {}: cgroup {} already exists (an orphan? see Adopt)", id, CgroupPath(id)));
    }
    return cgroup.status().WithPrefix("sandbox " + id);
  }
  os::CgroupLimits limits = LimitsFor(spec.resources);
  limits.cpu_weight = spec.cpu_weight;
  if (Status st = cgroup->SetLimits(limits); !st.ok()) return LimitError(st, id);

  sb->record.spec = std::move(canonical);
  sb->record.state = SandboxState::kCreated;
  sb->record.cgroup_version = std::string(os::CgroupVersionName(hierarchies_.version));
  sb->record.created_writable_dir = created_writable;
  sb->record.created_at = clock_.Now();
  sb->cgroup = std::move(cgroup).value();
  if (Status st = Persist(*sb); !st.ok()) {
    // The cgroup was moved into the entry: remove it here, as the entry is dropped.
    sb->cgroup.Remove(options_.kill_timeout).IgnoreError();
    return st.WithPrefix("sandbox " + id);
  }
  unreserve.Dismiss();
  remove_dir.Dismiss();
  remove_writable.Dismiss();
  Log()->info(
      "sandbox created id={} userns={} ms={:.2f}", id, spec.user_namespace,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

Status NativeRuntime::CheckUserInRange(const SandboxSpec& spec) const {
  if (!spec.user_namespace) return Status::Ok();
  auto in_range = [&](uint32_t v) { return v < options_.userns_size; };
  bool ok = in_range(spec.user.uid) && in_range(spec.user.gid);
  for (uint32_t g : spec.user.supplementary_gids) ok = ok && in_range(g);
  if (ok) return Status::Ok();
  return InvalidArgumentError(
      fmt::format("sandbox {}: user {}:{} is outside the user namespace's {} ids", spec.id,
                  spec.user.uid, spec.user.gid, options_.userns_size));
}

Status NativeRuntime::MakeWritableLayer(const std::string& id, const std::string& writable_dir,
                                        bool user_namespace) {
  for (const std::string& p : {writable_dir + "/upper", writable_dir + "/work"}) {
    RETURN_IF_ERROR(RemoveTree(p).WithPrefix("sandbox " + id));
    if (mkdir(p.c_str(), 0755) != 0) {
      return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, p), errno);
    }
    if (user_namespace &&
        lchown(p.c_str(), options_.userns_host_id, options_.userns_host_id) != 0) {
      return ErrnoError(fmt::format("sandbox {}: chown {}", id, p), errno);
    }
  }
  return Status::Ok();
}

Status NativeRuntime::Rebase(const SandboxSpec& spec, bool discard_writable) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  const std::string& id = spec.id;
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  SandboxSpec& current = sb->record.spec;
  if (sb->record.state == SandboxState::kRunning || sb->record.state == SandboxState::kPaused) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}: stop it before changing its image", id,
                    SandboxStateName(sb->record.state)));
  }
  auto kept = [&](bool same, const char* what) -> Status {
    if (same) return Status::Ok();
    return InvalidArgumentError(
        fmt::format("sandbox {}: an image change keeps its {}; the new spec changes it", id, what));
  };
  RETURN_IF_ERROR(kept(spec.writable_dir == current.writable_dir, "writable_dir"));
  RETURN_IF_ERROR(kept(spec.user_namespace == current.user_namespace, "user namespace"));
  RETURN_IF_ERROR(kept(spec.egress == current.egress, "network"));
  RETURN_IF_ERROR(kept(spec.log_path == current.log_path, "log"));
  RETURN_IF_ERROR(CheckUserInRange(spec));
  for (const std::string& layer : spec.layers) {
    RETURN_IF_ERROR(os::CheckLayerDir(layer).WithPrefix("sandbox " + id));
    if (spec.user_namespace) {
      auto mapped = idmaps_->Get(layer);
      if (!mapped.ok()) return mapped.status().WithPrefix("sandbox " + id);
    }
  }
  if (!sb->cgroup.relative().empty()) {
    if (Status st = sb->cgroup.SetLimits(LimitsFor(spec.resources)); !st.ok()) {
      return LimitError(st, id);
    }
  }
  sb->last_stats.reset();  // new limits and perhaps new files, with no CPU spent on either
  if (discard_writable) {
    RETURN_IF_ERROR(MakeWritableLayer(id, current.writable_dir, current.user_namespace));
  }
  current.layers = spec.layers;
  current.command = spec.command;
  current.env = spec.env;
  current.working_dir = spec.working_dir;
  current.user = spec.user;
  current.rlimits = spec.rlimits;
  current.resources = spec.resources;
  RETURN_IF_ERROR(Persist(*sb).WithPrefix("sandbox " + id));
  Log()->info("sandbox rebased id={} layers={} writable={}", id, spec.layers.size(),
              discard_writable ? "discarded" : "kept");
  return Status::Ok();
}

Status NativeRuntime::UpdateResources(std::string_view id, const Resources& resources) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  SandboxSpec next = sb->record.spec;
  next.resources = resources;
  RETURN_IF_ERROR(ValidateSpec(next));
  if (!sb->cgroup.relative().empty()) {
    if (Status st = sb->cgroup.SetLimits(LimitsFor(resources)); !st.ok()) {
      return LimitError(st, next.id);
    }
  }
  sb->record.spec.resources = resources;
  sb->last_stats.reset();
  return Persist(*sb).WithPrefix("sandbox " + next.id);
}

Status NativeRuntime::SetCpuWeight(std::string_view id, int weight) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (sb->cgroup.relative().empty()) return Status::Ok();  // made again at its next start
  return sb->cgroup.SetCpuWeight(weight).WithPrefix(fmt::format("sandbox {}", id));
}

Status NativeRuntime::Start(std::string_view id_view) {
  auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id_view));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id_view));
  const SandboxSpec& spec = sb->record.spec;
  const std::string& id = spec.id;
  if (sb->record.state == SandboxState::kRunning || sb->record.state == SandboxState::kPaused) {
    return FailedPreconditionError(fmt::format("sandbox {} is already running", id));
  }
  sb->last_stats.reset();
  if (sb->cgroup.relative().empty()) {
    // Adopted after its cgroup vanished (e.g. a reboot): make it again.
    ASSIGN_OR_RETURN(os::Cgroup cg, os::Cgroup::Create(hierarchies_, CgroupPath(id)));
    if (Status st = cg.SetLimits(LimitsFor(spec.resources)); !st.ok()) return LimitError(st, id);
    sb->cgroup = std::move(cg);
  }

  ChildPlan plan;
  plan.sandbox_id = id;
  plan.hostname = id;
  base::UniqueFd dev_null(open("/dev/null", O_RDWR | O_CLOEXEC));
  if (!dev_null) return ErrnoError("open /dev/null", errno);
  base::UniqueFd log;
  if (!spec.log_path.empty()) {
    log = base::UniqueFd(
        open(spec.log_path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0640));
    if (!log) return ErrnoError(fmt::format("sandbox {}: open log {}", id, spec.log_path), errno);
  }
  plan.stdio[0] = dev_null.get();
  plan.stdio[1] = plan.stdio[2] = log ? log.get() : dev_null.get();

  plan.user_namespace = spec.user_namespace;
  // Root inside a user namespace is no one outside it, so its setuid programs (sudo) may make
  // the image's user that root, as Docker allows; without one, root inside is the host's.
  plan.no_new_privs = !spec.user_namespace;
  for (auto it = spec.layers.rbegin(); it != spec.layers.rend(); ++it) {
    if (spec.user_namespace) {
      auto mapped = idmaps_->Get(*it);
      if (!mapped.ok()) return mapped.status().WithPrefix("sandbox " + id);
      plan.overlay.lower_top_first.push_back(*mapped);
    } else {
      plan.overlay.lower_top_first.push_back(*it);
    }
  }
  plan.overlay.upper = spec.writable_dir + "/upper";
  plan.overlay.work = spec.writable_dir + "/work";
  plan.overlay.userxattr = spec.user_namespace;
  // No device node in the image or the writable layer opens (with a user namespace the kernel
  // makes the overlay nodev anyway).
  plan.overlay.attrs = MOUNT_ATTR_NODEV;
  // A host crash loses a running sandbox's writable layer (the node reports the sandbox lost),
  // so syncing the layer at each unmount bought nothing and cost every teardown a commit of the
  // whole filesystem under it. Stop, the one path that keeps the layer for a later boot, syncs
  // it itself; here, in the boot that stopped it or synced, its marker may go.
  plan.overlay.volatile_upper = true;
  RETURN_IF_ERROR(os::ClearVolatileMarker(plan.overlay.work).WithPrefix("sandbox " + id));
  plan.rootfs_dir = SandboxDir(id) + "/rootfs";

  // Resolved again at every Start (restarts and adopted sandboxes too): volumes are the
  // sandbox's to fill, symlinks included.
  std::vector<base::UniqueFd> trees;
  for (const BindMount& m : spec.mounts) {
    auto bind = ResolveBindSource(m);
    if (!bind.ok()) return bind.status().WithPrefix("sandbox " + id);
    plan.binds.push_back(ChildBind{bind->tree.get(), m.target, bind->is_dir});
    trees.push_back(std::move(bind->tree));
  }

  plan.rlimits.push_back(
      os::Rlimit{RLIMIT_NOFILE, std::min<uint64_t>(1024, nofile_hard_), nofile_hard_});
  for (const os::Rlimit& l : spec.rlimits) {
    auto same = std::find_if(plan.rlimits.begin(), plan.rlimits.end(),
                             [&](const os::Rlimit& x) { return x.resource == l.resource; });
    if (same != plan.rlimits.end()) {
      *same = l;
    } else {
      plan.rlimits.push_back(l);
    }
  }
  plan.uid = spec.user.uid;
  plan.gid = spec.user.gid;
  plan.groups.assign(spec.user.supplementary_gids.begin(), spec.user.supplementary_gids.end());
  plan.capabilities = os::SandboxDefaultCapabilities();
  plan.last_cap = last_cap_;
  ASSIGN_OR_RETURN(plan.seccomp, os::DockerDefaultSeccompProgram());
  plan.working_dir = spec.working_dir;
  plan.exec_candidates = ExecCandidates(spec);
  for (const std::string& a : spec.command) plan.argv.push_back(const_cast<char*>(a.c_str()));
  plan.argv.push_back(nullptr);
  for (const std::string& e : spec.env) plan.envp.push_back(const_cast<char*>(e.c_str()));
  plan.envp.push_back(nullptr);

  LaunchOptions launch;
  launch.user_namespace = spec.user_namespace;
  launch.uids = launch.gids = os::IdMapping{0, options_.userns_host_id, options_.userns_size};
  launch.cgroup = &sb->cgroup;
  launch.timeout = kExecTimeout;
  uint64_t oom_before = 0;
  if (auto stats = sb->cgroup.Stats(); stats.ok()) oom_before = stats->oom_kills;
  void* shared = MAP_FAILED;
  if (options_.trace_launches) {
    shared = mmap(nullptr, sizeof(LaunchTrace), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                  -1, 0);
    if (shared != MAP_FAILED) plan.trace = new (shared) LaunchTrace();
  }
  auto unmap = base::ScopeExit([&] {
    if (shared != MAP_FAILED) munmap(shared, sizeof(LaunchTrace));
  });
  std::optional<sbnet::Attachment> egress;
  if (spec.egress) {
    if (options_.network == nullptr) return NoSandboxNetwork(id);
    launch.before_release = [&](pid_t pid) -> Status {
      base::UniqueFd ns(open(fmt::format("/proc/{}/ns/net", pid).c_str(), O_RDONLY | O_CLOEXEC));
      if (!ns) return ErrnoError(fmt::format("sandbox {}: open its network namespace", id), errno);
      ASSIGN_OR_RETURN(
          egress, options_.network->Attach(id, ns.get(), spec.egress_policy, sb->last_address));
      return Status::Ok();
    };
  }
  auto launched = LaunchSandboxProcess(plan, launch);
  if (plan.trace != nullptr) sb->trace = *plan.trace;
  if (!launched.ok()) {
    if (egress) options_.network->Detach(*egress);
    return launched.status();
  }
  os::Pidfd process = std::move(launched).value();

  SandboxRecord& r = sb->record;
  r.pid = process.pid();
  r.start_time = os::ProcessStartTime(process.pid()).value_or(0);
  r.boot_id = os::BootId().value_or("");
  r.started_at = clock_.Now();
  r.state = SandboxState::kRunning;
  r.last_exit.reset();
  r.oom_kills_at_start = oom_before;
  r.egress_address = egress ? os::FormatIpv4(egress->address) : "";
  r.egress_link = egress ? egress->host_link : "";
  sb->process = std::move(process);
  if (Status st = Persist(*sb); !st.ok()) {
    Log()->warn("persist sandbox={} error={}", id, st.ToString());
  }
  if (Status st = reaper_->Watch(id, sb->process->fd()); !st.ok()) {
    Log()->warn("watch sandbox={} error={}", id, st.ToString());
  }
  Log()->info(
      "sandbox started id={} pid={} ms={:.2f}", id, r.pid,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  return Status::Ok();
}

Status NativeRuntime::Pause(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (sb->record.state == SandboxState::kPaused) return Status::Ok();
  if (sb->record.state != SandboxState::kRunning) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not running", id, SandboxStateName(sb->record.state)));
  }
  if (Status st = sb->cgroup.Freeze(options_.freeze_timeout); !st.ok()) {
    sb->cgroup.Thaw(options_.freeze_timeout).IgnoreError();
    return st.WithPrefix(fmt::format("sandbox {}: pause", id));
  }
  sb->record.state = SandboxState::kPaused;
  return Persist(*sb);
}

Status NativeRuntime::Resume(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (sb->record.state == SandboxState::kRunning) return Status::Ok();
  if (sb->record.state != SandboxState::kPaused) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not paused", id, SandboxStateName(sb->record.state)));
  }
  RETURN_IF_ERROR(
      sb->cgroup.Thaw(options_.freeze_timeout).WithPrefix(fmt::format("sandbox {}: resume", id)));
  sb->record.state = SandboxState::kRunning;
  return Persist(*sb);
}

Status NativeRuntime::CaptureWritableLayer(
    std::string_view id, const std::function<Status(const WritableLayerView&)>& read) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  const SandboxSpec& spec = sb->record.spec;
  const std::string upper = spec.writable_dir + "/upper";
  base::UniqueFd dir(open(upper.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) return ErrnoError(fmt::format("sandbox {}: open {}", id, upper), errno);
  // Frozen for the copy only: a crash in between leaves it frozen, and adoption then finds it
  // paused, which the node agent resumes because its object is not.
  const bool freeze = sb->record.state == SandboxState::kRunning;
  if (freeze) {
    if (Status st = sb->cgroup.Freeze(options_.freeze_timeout); !st.ok()) {
      sb->cgroup.Thaw(options_.freeze_timeout).IgnoreError();
      return st.WithPrefix(fmt::format("sandbox {}: freeze for capture", id));
    }
  }
  WritableLayerView view;
  view.fd = dir.get();
  if (spec.user_namespace) {
    view.id_shift = options_.userns_host_id;
    view.id_count = options_.userns_size;
  }
  Status result = read(view);
  if (freeze) {
    if (Status st = sb->cgroup.Thaw(options_.freeze_timeout); !st.ok()) {
      return st.WithPrefix(fmt::format("sandbox {}: thaw after capture", id));
    }
  }
  return result;
}

Status NativeRuntime::KillLocked(Sandbox& sb) {
  const std::string& id = sb.record.spec.id;
  if (sb.process) sb.process->SendSignal(SIGKILL).IgnoreError();
  // Thaws a paused sandbox too: frozen tasks act on SIGKILL only once thawed.
  if (!sb.cgroup.relative().empty()) sb.cgroup.KillAll().IgnoreError();
  if (sb.process) {
    Status st = sb.process->WaitForExit(options_.kill_timeout);
    if (!st.ok()) return st.WithPrefix(fmt::format("sandbox {}: kill", id));
  }
  return Status::Ok();
}

Status NativeRuntime::Stop(std::string_view id, std::chrono::milliseconds grace) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::optional<ExitStatus> exit;
  Status synced;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (sb->process) {
      if (sb->record.state == SandboxState::kPaused) {
        RETURN_IF_ERROR(sb->cgroup.Thaw(options_.freeze_timeout));
        sb->record.state = SandboxState::kRunning;
      }
      sb->process->SendSignal(SIGTERM).IgnoreError();
      if (!sb->process->WaitForExit(grace).ok()) RETURN_IF_ERROR(KillLocked(*sb));
    }
    exit = CollectExitLocked(*sb);
    // The layer is kept for a later Start, maybe after a host crash: what the volatile mount
    // left in the page cache goes to disk now. The exit is reported either way.
    synced = os::SyncUpper(sb->record.spec.writable_dir + "/upper")
                 .WithPrefix("sandbox " + std::string(id));
  }
  NotifyExit(std::string(id), exit);
  return synced;
}

Status NativeRuntime::RemoveSandboxFiles(const SandboxRecord& record) {
  RETURN_IF_ERROR(RemoveTree(record.spec.writable_dir).WithPrefix("sandbox " + record.spec.id));
  return RemoveTree(SandboxDir(record.spec.id)).WithPrefix("sandbox " + record.spec.id);
}

Status NativeRuntime::Destroy(std::string_view id) {
  auto found = Find(id);
  if (!found.ok()) {
    bool any = IsValidSandboxName(id) &&
               (Exists(SandboxDir(id)) || os::Cgroup::Open(hierarchies_, CgroupPath(id)).ok());
    if (!any) return found.status();
    // Not ours but on disk: an orphan of an earlier run.
    return RemoveOrphan(Orphan{std::string(id), SandboxDir(id), "destroy"});
  }
  SandboxPtr sb = *found;
  std::optional<ExitStatus> exit;
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  auto t0 = Clock::now(), t1 = t0, t2 = t0, t3 = t0;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (sb->process) {
      RETURN_IF_ERROR(KillLocked(*sb));
      exit = CollectExitLocked(*sb);
    }
    t1 = Clock::now();
    RETURN_IF_ERROR(
        sb->cgroup.Remove(options_.kill_timeout).WithPrefix(fmt::format("sandbox {}", id)));
    t2 = Clock::now();
    RETURN_IF_ERROR(RemoveSandboxFiles(sb->record));
    t3 = Clock::now();
    sb->gone = true;
    std::lock_guard table_lock(table_mu_);
    table_.erase(std::string(id));
  }
  Log()->info("sandbox destroyed id={} kill_ms={:.2f} cgroup_ms={:.2f} files_ms={:.2f}", id,
              ms(t1 - t0), ms(t2 - t1), ms(t3 - t2));
  NotifyExit(std::string(id), exit);
  return Status::Ok();
}

Result<SandboxStats> NativeRuntime::Stats(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  // An idle sandbox (a pool member) is sampled every few seconds for as long as it waits; a
  // full read now and then still catches what changes without its CPU (reclaim of its cache).
  constexpr auto kMaxIdleStatsAge = std::chrono::seconds(60);
  const auto now = std::chrono::steady_clock::now();
  if (sb->last_stats && !sb->cgroup.relative().empty() &&
      now - sb->last_stats_at < kMaxIdleStatsAge) {
    auto cpu = sb->cgroup.CpuUsageNs();
    if (cpu.ok() && *cpu == sb->last_stats->cpu_usage_ns) return *sb->last_stats;
  }
  SandboxStats s;
  if (!sb->cgroup.relative().empty()) {
    auto cg = sb->cgroup.Stats();
    if (!cg.ok()) return cg.status().WithPrefix(fmt::format("sandbox {}: stats", id));
    s.cpu_usage_ns = cg->cpu_usage_ns;
    s.memory_bytes = cg->memory_bytes;
    s.memory_working_set_bytes = cg->memory_working_set_bytes;
    s.memory_limit_bytes = cg->memory_limit_bytes;
    s.pids = cg->pids;
    s.oom_kills = cg->oom_kills;
  }
  auto disk = DiskUsage(sb->record.spec.writable_dir + "/upper");
  if (disk.ok()) s.disk_bytes = *disk;
  sb->last_stats = s;
  sb->last_stats_at = now;
  return s;
}

Result<SandboxInfo> NativeRuntime::Inspect(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  return InfoLocked(*sb);
}

std::vector<SandboxInfo> NativeRuntime::List() {
  std::vector<SandboxPtr> all;
  {
    std::lock_guard lock(table_mu_);
    for (auto& [id, sb] : table_) all.push_back(sb);
  }
  std::vector<SandboxInfo> out;
  for (const SandboxPtr& sb : all) {
    std::lock_guard lock(sb->mu);
    if (!sb->gone) out.push_back(InfoLocked(*sb));
  }
  return out;
}

Result<int> NativeRuntime::Pid(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone || !sb->process) {
    return FailedPreconditionError(fmt::format("sandbox {} is not running", id));
  }
  return static_cast<int>(sb->process->pid());
}

Result<LaunchTrace> NativeRuntime::LaunchTraceOf(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  return sb->trace;
}

Result<ExitStatus> NativeRuntime::Wait(std::string_view id, std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  base::UniqueFd pidfd;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (!sb->process) {
      if (sb->record.last_exit) return *sb->record.last_exit;
      return FailedPreconditionError(fmt::format("sandbox {} has not been started", id));
    }
    pidfd = base::UniqueFd(fcntl(sb->process->fd(), F_DUPFD_CLOEXEC, 0));
    if (!pidfd) return ErrnoError("dup pidfd", errno);
  }
  pollfd p = {pidfd.get(), POLLIN, 0};
  int n;
  do {
    n = poll(&p, 1, static_cast<int>(timeout.count()));
  } while (n < 0 && errno == EINTR);
  if (n == 0) {
    return DeadlineExceededError(
        fmt::format("sandbox {} still runs after {} ms", id, timeout.count()));
  }
  std::optional<ExitStatus> exit;
  ExitStatus result;
  {
    std::lock_guard lock(sb->mu);
    exit = CollectExitLocked(*sb);
    if (!exit && !sb->record.last_exit) {
      return InternalError(fmt::format("sandbox {}: exit not recorded", id));
    }
    result = exit ? *exit : *sb->record.last_exit;
  }
  NotifyExit(std::string(id), exit);
  return result;
}

Result<base::UniqueFd> NativeRuntime::Dial(std::string_view id, uint16_t port,
                                           std::chrono::milliseconds timeout) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::shared_ptr<const base::UniqueFd> pidfd;
  {
    std::lock_guard lock(sb->mu);
    ASSIGN_OR_RETURN(pidfd, DialPidfdLocked(*sb));
  }
  auto fd = os::DialInNetns(pidfd->get(), port, timeout);
  if (!fd.ok()) return fd.status().WithPrefix(fmt::format("sandbox {}", id));
  return fd;
}

Result<std::shared_ptr<const base::UniqueFd>> NativeRuntime::DialPidfdLocked(Sandbox& sb) {
  if (sb.gone || !sb.process) {
    return FailedPreconditionError(fmt::format("sandbox {} is not running", sb.record.spec.id));
  }
  if (!sb.dial_pidfd) {
    base::UniqueFd dup(fcntl(sb.process->fd(), F_DUPFD_CLOEXEC, 0));
    if (!dup) return ErrnoError("dup pidfd", errno);
    sb.dial_pidfd = std::make_shared<const base::UniqueFd>(std::move(dup));
  }
  return sb.dial_pidfd;
}

std::optional<Result<base::UniqueFd>> NativeRuntime::DialNow(std::string_view id, uint16_t port) {
  auto sb = Find(id);
  if (!sb.ok()) return sb.status();
  Result<std::shared_ptr<const base::UniqueFd>> pidfd = nullptr;
  {
    std::unique_lock lock((*sb)->mu, std::try_to_lock);
    if (!lock) return std::nullopt;  // a lifecycle operation holds it: Dial waits, this may not
    pidfd = DialPidfdLocked(**sb);
  }
  if (!pidfd.ok()) return pidfd.status();
  // A zero timeout: the loopback handshake (or its refusal) completes inside connect(2), so
  // only a listener whose backlog is full is left undecided, and that one waits on a thread.
  auto fd = os::DialInNetns((*pidfd)->get(), port, std::chrono::milliseconds(0));
  if (!fd.ok() && fd.status().code() == StatusCode::kDeadlineExceeded) return std::nullopt;
  if (!fd.ok()) return fd.status().WithPrefix(fmt::format("sandbox {}", id));
  return fd;
}

Result<NativeRuntime::SandboxPtr> NativeRuntime::AdoptOne(const std::string& id,
                                                          SandboxRecord record) {
  auto sb = std::make_shared<Sandbox>();
  sb->record = std::move(record);
  SandboxRecord& r = sb->record;
  auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(id));
  if (cg.ok()) sb->cgroup = std::move(cg).value();

  bool alive = false;
  if ((r.state == SandboxState::kRunning || r.state == SandboxState::kPaused) && r.pid > 0) {
    auto boot = os::BootId();
    auto process = os::Pidfd::Open(r.pid);
    // The start time is read after the pidfd is open: if it matches now, the pidfd refers to
    // the very process we recorded, not a later one that got the same pid. Start times count
    // in clock ticks (10 ms), so a process that got the pid within the same tick is told apart
    // by where it sits: pid 1 of a sandbox is always in the sandbox's own cgroup.
    if (boot.ok() && *boot == r.boot_id && process.ok() && !process->HasExited()) {
      auto start = os::ProcessStartTime(r.pid);
      if (start.ok() && *start == r.start_time && InItsCgroup(sb->cgroup, r.pid)) {
        alive = true;
        sb->process = std::move(process).value();
      }
    }
  }
  if (alive) {
    auto frozen = sb->cgroup.relative().empty() ? Result<bool>(false) : sb->cgroup.IsFrozen();
    r.state = frozen.ok() && *frozen ? SandboxState::kPaused : SandboxState::kRunning;
    if (r.spec.egress && r.egress_address.empty()) {
      // Linked, then the server died before the record said so: the namespace knows.
      if (auto found = EgressAddressInside(r.pid); found) {
        r.egress_address = os::FormatIpv4(*found);
        Log()->info("sandbox={} egress address read from its namespace: {}", id, r.egress_address);
      }
    }
    if (auto a = EgressOf(r); a && options_.network != nullptr) {
      if (Status st = options_.network->Adopt(*a, r.spec.egress_policy); !st.ok()) {
        Log()->warn("sandbox={} egress not adopted: {}", id, st.ToString());
      }
    }
  } else if (r.state == SandboxState::kRunning || r.state == SandboxState::kPaused) {
    DetachEgressLocked(*sb);
    r.state = SandboxState::kStopped;
    r.pid = 0;
    r.start_time = 0;
    ExitStatus unknown;
    unknown.unknown = true;
    r.last_exit = unknown;
  }
  RETURN_IF_ERROR(Persist(*sb));
  return sb;
}

Result<AdoptionReport> NativeRuntime::Adopt() {
  AdoptionReport report;
  std::vector<std::string> names;
  {
    DIR* d = opendir(options_.state_dir.c_str());
    if (d == nullptr) return ErrnoError(fmt::format("opendir {}", options_.state_dir), errno);
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  std::string version(os::CgroupVersionName(hierarchies_.version));
  for (const std::string& name : names) {
    {
      std::lock_guard lock(table_mu_);
      if (table_.count(name)) continue;
    }
    std::string dir = SandboxDir(name);
    if (!IsValidSandboxName(name)) {
      report.orphans.push_back(Orphan{name, dir, "not a sandbox id"});
      continue;
    }
    auto text = base::ReadSmallFile(dir + "/state.json");
    auto record = text.ok() ? DecodeRecord(*text) : Result<SandboxRecord>(text.status());
    if (!record.ok()) {
      report.orphans.push_back(
          Orphan{name, dir, "unreadable state record: " + record.status().message()});
      continue;
    }
    if (record->spec.id != name) {
      report.orphans.push_back(Orphan{name, dir, "state record names " + record->spec.id});
      continue;
    }
    if (record->cgroup_version != version) {
      report.orphans.push_back(Orphan{
          name, dir,
          fmt::format("made with cgroup {}, runtime uses {}", record->cgroup_version, version)});
      continue;
    }
    auto sb = AdoptOne(name, std::move(record).value());
    if (!sb.ok()) {
      report.orphans.push_back(Orphan{name, dir, sb.status().message()});
      continue;
    }
    std::lock_guard lock((*sb)->mu);
    if ((*sb)->process) {
      if (Status st = reaper_->Watch(name, (*sb)->process->fd()); !st.ok()) {
        Log()->warn("watch sandbox={} error={}", name, st.ToString());
      }
    }
    report.adopted.push_back(InfoLocked(**sb));
    std::lock_guard table_lock(table_mu_);
    table_.emplace(name, *sb);
  }
  ASSIGN_OR_RETURN(auto groups, os::ListCgroupChildren(hierarchies_, options_.cgroup_parent));
  for (const std::string& name : groups) {
    {
      std::lock_guard lock(table_mu_);
      if (table_.count(name)) continue;
    }
    if (Exists(SandboxDir(name))) continue;  // reported above
    auto dirs = hierarchies_.DirsFor(CgroupPath(name));
    report.orphans.push_back(Orphan{name, dirs.empty() ? CgroupPath(name) : dirs.front(),
                                    "cgroup without a state record"});
  }
  Log()->info("adoption adopted={} orphans={}", report.adopted.size(), report.orphans.size());
  return report;
}

Status NativeRuntime::RemoveOrphan(const Orphan& orphan) {
  if (!IsValidSandboxName(orphan.id)) {
    // Only a stray directory in the state dir can have such a name.
    if (orphan.id.empty() || orphan.id.find('/') != std::string::npos || orphan.id == "." ||
        orphan.id == "..") {
      return InvalidArgumentError(fmt::format("orphan id '{}' is not removable", orphan.id));
    }
    return RemoveTree(SandboxDir(orphan.id));
  }
  {
    std::lock_guard lock(table_mu_);
    if (table_.count(orphan.id)) {
      return FailedPreconditionError(
          fmt::format("sandbox {} is managed, not an orphan: destroy it instead", orphan.id));
    }
  }
  auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(orphan.id));
  if (cg.ok()) RETURN_IF_ERROR(cg->Remove(options_.kill_timeout));
  auto text = base::ReadSmallFile(SandboxDir(orphan.id) + "/state.json");
  if (text.ok()) {
    auto record = DecodeRecord(*text);
    if (record.ok() && record->spec.id == orphan.id) {
      // Its process may still run (it was made by another cgroup version's runtime, say).
      if (record->pid > 0) {
        auto process = os::Pidfd::Open(record->pid);
        auto start = os::ProcessStartTime(record->pid);
        if (process.ok() && start.ok() && *start == record->start_time) {
          process->SendSignal(SIGKILL).IgnoreError();
          process->WaitForExit(options_.kill_timeout).IgnoreError();
          process->TryReap().status().IgnoreError();
        }
      }
      RETURN_IF_ERROR(RemoveTree(record->spec.writable_dir));
    }
  }
  RETURN_IF_ERROR(RemoveTree(SandboxDir(orphan.id)));
  Log()->info("orphan removed id={} reason={}", orphan.id, orphan.reason);
  return Status::Ok();
}

}  // namespace warren::runtime::native
