#include "runtime/gvisor/gvisor_runtime.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "base/log.h"
#include "base/scope_guard.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "os/mount.h"
#include "os/overlay.h"
#include "os/rlimit.h"
#include "os/spawn.h"
#include "runtime/gvisor/oci_config.h"
#include "runtime/native/bind_source.h"
#include "runtime/native/dir_tree.h"

namespace warren::runtime::gvisor {
namespace {

using Millis = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
constexpr auto kRunscTimeout = std::chrono::seconds(30);
// How long a failed checkpoint's container gets to show that it ended with it (Hibernate).
constexpr auto kCheckpointFailureSettle = std::chrono::seconds(3);
// Runs its arguments (runsc), then renames $WARREN_RENAME_FROM to $WARREN_RENAME_TO when they
// succeeded; exits with runsc's status either way.
constexpr std::string_view kRenameAfterRunsc =
    R"("$@" || exit $?; exec mv -T -- "$WARREN_RENAME_FROM" "$WARREN_RENAME_TO")";
constexpr size_t kMaxRunscOutput = 64 * 1024;

auto Log() {
  static auto logger = base::Logger("runtime.gvisor");
  return logger;
}

// Processes with `arg` among their command-line arguments (a checkpoint naming its image).
std::vector<int> ProcessesWithArgument(const std::string& arg) {
  std::vector<int> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    auto pid = base::ParseUint64(e->d_name);
    if (!pid || *pid == 0 || *pid > INT32_MAX) continue;
    auto cmdline = base::ReadSmallFile(fmt::format("/proc/{}/cmdline", *pid));
    if (!cmdline.ok()) continue;
    for (std::string_view rest = *cmdline; !rest.empty();) {
      const size_t end = rest.find('\0');
      if (rest.substr(0, end) == arg) {
        out.push_back(static_cast<int>(*pid));
        break;
      }
      if (end == std::string_view::npos) break;
      rest.remove_prefix(end + 1);
    }
  }
  closedir(d);
  return out;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string Parent(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == 0 ? "/" : path.substr(0, slash);
}

int RemainingMs(SteadyClock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - SteadyClock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// The last error runsc logged (its --log file holds one JSON object per line).
std::string LastRunscError(const std::string& log_path) {
  auto text = base::ReadSmallFile(log_path, 4 << 20);
  if (!text.ok()) return "";
  std::string last;
  for (std::string_view line : base::SplitNonEmpty(*text, '\n')) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_object() && j.value("level", "") != "debug" && j.contains("msg")) {
      last = j.value("msg", "");
    }
  }
  return last;
}

// Reads `fd` until EOF, `deadline` or the process behind `pidfd` has exited and the pipe is
// drained (runsc may leave a daemon holding the pipe).
std::string Drain(int fd, int pidfd, SteadyClock::time_point deadline, bool* timed_out) {
  std::string out;
  char buf[4096];
  bool exited = false;
  for (;;) {
    pollfd p[2] = {{fd, POLLIN, 0}, {pidfd, POLLIN, 0}};
    int r = poll(p, exited ? 1 : 2, exited ? 0 : RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      if (!exited) *timed_out = true;
      return out;
    }
    if (p[0].revents) {
      ssize_t n = read(fd, buf, sizeof buf);
      if (n <= 0) return out;
      if (out.size() < kMaxRunscOutput) out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (!exited && p[1].revents) exited = true;
  }
}

// `runsc --version`'s first line: the binary is there and runs (an executable file that does
// not, or hangs, must not be offered as a runtime class).
// What a program printed and how it ended, run to its end or until `timeout` (then killed).
struct Ran {
  std::string out, err;
  int wait_status = 0;
  bool timed_out = false;
  bool succeeded() const {
    return !timed_out && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
  }
};

Result<Ran> RunToEnd(os::SpawnOptions spawn, std::chrono::milliseconds timeout) {
  spawn.stdin_pipe = false;
  ASSIGN_OR_RETURN(os::SpawnedChild child, os::Spawn(spawn));
  auto pidfd = os::Pidfd::Open(child.pid);
  if (!pidfd.ok()) {
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
    return pidfd.status();
  }
  const auto deadline = SteadyClock::now() + timeout;
  Ran ran;
  ran.out = Drain(child.stdout_r.get(), pidfd->fd(), deadline, &ran.timed_out);
  if (!ran.timed_out) ran.err = Drain(child.stderr_r.get(), pidfd->fd(), deadline, &ran.timed_out);
  if (ran.timed_out) pidfd->SendSignal(SIGKILL).IgnoreError();
  while (waitpid(child.pid, &ran.wait_status, 0) < 0 && errno == EINTR) {
  }
  return ran;
}

// `runsc --version`'s first line: the binary is there and runs (an executable file that does
// not, or hangs, must not be offered as a runtime class).
Result<std::string> RunscVersion(const std::string& runsc) {
  os::SpawnOptions spawn;
  spawn.argv = {runsc, "--version"};
  spawn.env = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  ASSIGN_OR_RETURN(Ran ran, RunToEnd(std::move(spawn), std::chrono::seconds(10)));
  if (!ran.succeeded()) {
    return FailedPreconditionError(fmt::format(
        "{} --version did not run ({})", runsc,
        ran.timed_out ? "no answer in 10 s" : fmt::format("wait status {}", ran.wait_status)));
  }
  return std::string(base::TrimSpace(ran.out.substr(0, ran.out.find('\n'))));
}

// Connects to the shim's socket of the sandbox in `dir`; its path may be longer than sun_path,
// so it is reached through a directory fd.
Result<base::UniqueFd> ConnectShim(const std::string& dir) {
  base::UniqueFd dir_fd(open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd) return ErrnoError(fmt::format("open {}", dir), errno);
  std::string path = fmt::format("/proc/self/fd/{}/mux.sock", dir_fd.get());
  base::UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) return ErrnoError("socket", errno);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return InternalError("socket path too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  if (connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int err = errno;
    return UnavailableError(fmt::format("its channel is gone ({})", std::strerror(err)));
  }
  return fd;
}

// Sends one request line and reads the one-line reply, byte by byte: what follows the reply
// belongs to the caller (a dialled stream).
Result<std::string> ShimRequest(int fd, const std::string& line, Millis timeout) {
  auto deadline = SteadyClock::now() + timeout;
  if (send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    return UnavailableError(fmt::format("its channel refused the request ({})", strerror(errno)));
  }
  std::string reply;
  while (reply.size() < 1024) {
    pollfd p = {fd, POLLIN, 0};
    int r = poll(&p, 1, RemainingMs(deadline));
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) {
      return DeadlineExceededError(
          fmt::format("no answer from the sandbox within {} ms", timeout.count()));
    }
    char c;
    ssize_t n = read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return UnavailableError("its channel closed");
    if (c == '\n') return reply;
    reply.push_back(c);
  }
  return InternalError("the shim's reply is too long");
}

std::optional<ExitStatus> ReadExitFile(const std::string& path) {
  auto text = base::ReadSmallFile(path, 256);
  if (!text.ok()) return std::nullopt;
  auto parts = base::SplitNonEmpty(base::TrimSpace(*text), ' ');
  if (parts.size() != 2) return std::nullopt;
  auto code = base::ParseInt64(parts[0]);
  auto sig = base::ParseInt64(parts[1]);
  if (!code || !sig) return std::nullopt;
  ExitStatus e;
  e.exit_code = static_cast<int>(*code);
  e.signal = static_cast<int>(*sig);
  if (e.signal != 0) e.exit_code = -1;
  return e;
}

// Hard links to every file of runsc's image directory `from` (flat: checkpoint.img and its
// companions) in `to`.
Status LinkFiles(const std::string& from, const std::string& to) {
  std::unique_ptr<DIR, int (*)(DIR*)> dir(opendir(from.c_str()), closedir);
  if (!dir) return ErrnoError(fmt::format("open {}", from), errno);
  while (dirent* e = readdir(dir.get())) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (e->d_type != DT_REG) {
      return InternalError(
          fmt::format("{}/{} is not a file: not an image runsc wrote", from, name));
    }
    if (link((from + "/" + name).c_str(), (to + "/" + name).c_str()) != 0) {
      return ErrnoError(fmt::format("link {}/{} into {}", from, name, to), errno);
    }
  }
  return Status::Ok();
}

bool IsMounted(const std::string& path) {
  auto mounts = os::ReadMountInfo();
  if (!mounts.ok()) return false;
  return std::any_of(mounts->begin(), mounts->end(),
                     [&](const os::MountEntry& m) { return m.mount_point == path; });
}

}  // namespace

Result<std::unique_ptr<GvisorRuntime>> GvisorRuntime::Create(GvisorRuntimeOptions options) {
  if (geteuid() != 0) return FailedPreconditionError("the gvisor runtime needs root");
  if (options.state_dir.empty() || options.state_dir.front() != '/') {
    return InvalidArgumentError("state_dir must be an absolute path");
  }
  if (options.cgroup_parent.empty() || options.cgroup_parent.front() == '/' ||
      options.cgroup_parent.find("..") != std::string::npos) {
    return InvalidArgumentError("cgroup_parent must be a relative path without '..'");
  }
  if (access(options.runsc_path.c_str(), X_OK) != 0) {
    return FailedPreconditionError(
        fmt::format("runsc is not installed at {} (apt-get install runsc)", options.runsc_path));
  }
  if (options.init_path.empty() || access(options.init_path.c_str(), X_OK) != 0) {
    return FailedPreconditionError(
        fmt::format("warren-gvisor-init not found at \"{}\"", options.init_path));
  }
  ASSIGN_OR_RETURN(const std::string version, RunscVersion(options.runsc_path));
  ASSIGN_OR_RETURN(auto hierarchies, os::CgroupHierarchies::Detect(options.cgroup_version));
  for (const std::string& d : {options.state_dir, options.state_dir + "/.runsc"}) {
    std::string p;
    for (std::string_view part : base::SplitNonEmpty(d, '/')) {
      p += "/" + std::string(part);
      if (mkdir(p.c_str(), 0711) != 0 && errno != EEXIST) {
        return ErrnoError(fmt::format("mkdir {}", p), errno);
      }
    }
  }
  auto rt = std::make_unique<GvisorRuntime>(Key(), std::move(options), std::move(hierarchies));
  if (auto nofile = os::CurrentRlimit(RLIMIT_NOFILE); nofile.ok()) {
    rt->nofile_hard_ = static_cast<uint32_t>(std::min<uint64_t>(nofile->hard, uint64_t{1} << 20));
  }
  GvisorRuntime* raw = rt.get();
  ASSIGN_OR_RETURN(rt->reaper_,
                   native::Reaper::Start([raw](const std::string& id) { raw->OnProcessExit(id); }));
  Log()->info("gvisor runtime ready state_dir={} runsc={} ({}) init={}", rt->options_.state_dir,
              rt->options_.runsc_path, version, rt->options_.init_path);
  return rt;
}

GvisorRuntime::GvisorRuntime(Key, GvisorRuntimeOptions options, os::CgroupHierarchies hierarchies)
    : options_(std::move(options)),
      hierarchies_(std::move(hierarchies)),
      clock_(options_.clock != nullptr ? *options_.clock : base::RealClock()) {}

GvisorRuntime::~GvisorRuntime() {
  // Sandboxes and their shims keep running; only the watching stops.
  reaper_.reset();
  std::map<std::string, SandboxPtr, std::less<>> all;
  {
    std::lock_guard lock(table_mu_);
    all.swap(table_);
  }
  for (auto& [id, sb] : all) {
    std::lock_guard sb_lock(sb->mu);
    sb->shim.reset();
  }
}

std::string GvisorRuntime::SandboxDir(std::string_view id) const {
  return fmt::format("{}/{}", options_.state_dir, id);
}

std::string GvisorRuntime::CgroupPath(std::string_view id) const {
  return fmt::format("{}/{}", options_.cgroup_parent, id);
}

std::vector<std::string> GvisorRuntime::RunscArgv(std::string_view id) const {
  return {options_.runsc_path, "--root=" + options_.state_dir + "/.runsc", "--platform=ptrace",
          "--network=none", fmt::format("--log={}/runsc.log", SandboxDir(id))};
}

Result<std::string> GvisorRuntime::Runsc(
    std::string_view id, const std::vector<std::string>& args, Millis timeout,
    const std::optional<std::pair<std::string, std::string>>& then_rename) {
  os::SpawnOptions spawn;
  spawn.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  if (then_rename) {
    spawn.argv = {"/bin/sh", "-c", std::string(kRenameAfterRunsc), "warren-runsc"};
    spawn.env.push_back("WARREN_RENAME_FROM=" + then_rename->first);
    spawn.env.push_back("WARREN_RENAME_TO=" + then_rename->second);
  }
  for (std::string& a : RunscArgv(id)) spawn.argv.push_back(std::move(a));
  spawn.argv.insert(spawn.argv.end(), args.begin(), args.end());
  ASSIGN_OR_RETURN(Ran ran, RunToEnd(std::move(spawn), timeout));
  const std::string what = fmt::format("sandbox {}: runsc {}", id, args.empty() ? "" : args[0]);
  if (ran.timed_out) {
    return DeadlineExceededError(fmt::format("{} did not finish in {} ms", what, timeout.count()));
  }
  if (ran.succeeded()) return std::move(ran.out);
  std::string why = LastRunscError(SandboxDir(id) + "/runsc.log");
  if (why.empty()) why = std::string(base::TrimSpace(ran.err));
  const int status = ran.wait_status;
  return InternalError(fmt::format("{} failed ({}): {}", what,
                                   WIFEXITED(status) ? fmt::format("exit {}", WEXITSTATUS(status))
                                                     : fmt::format("signal {}", WTERMSIG(status)),
                                   why));
}

Result<GvisorRuntime::SandboxPtr> GvisorRuntime::Find(std::string_view id) {
  std::lock_guard lock(table_mu_);
  auto it = table_.find(id);
  if (it == table_.end()) return NotFoundError(fmt::format("sandbox {} not found", id));
  return it->second;
}

Status GvisorRuntime::Persist(const Sandbox& sb) {
  return base::WriteFileAtomically(SandboxDir(sb.record.spec.id) + "/state.json",
                                   native::EncodeRecord(sb.record));
}

SandboxInfo GvisorRuntime::InfoLocked(const Sandbox& sb) const {
  SandboxInfo info;
  info.id = sb.record.spec.id;
  info.state = sb.record.state;
  info.pid = sb.shim ? sb.shim->pid() : 0;
  info.user_namespace = false;
  info.created_at = sb.record.created_at;
  info.started_at = sb.record.started_at;
  info.last_exit = sb.record.last_exit;
  return info;
}

void GvisorRuntime::SetExitCallback(ExitCallback callback) {
  std::lock_guard lock(callback_mu_);
  on_exit_ = std::move(callback);
}

void GvisorRuntime::NotifyExit(const std::string& id, const std::optional<ExitStatus>& exit) {
  if (!exit) return;
  ExitCallback cb;
  {
    std::lock_guard lock(callback_mu_);
    cb = on_exit_;
  }
  if (cb) cb(id, *exit);
}

Status GvisorRuntime::Create(const SandboxSpec& spec) {
  RETURN_IF_ERROR(ValidateSpec(spec));
  const std::string& id = spec.id;
  if (spec.egress) {
    return FailedPreconditionError(
        fmt::format("sandbox {}: gVisor sandboxes have no network link out (runsc runs with "
                    "--network=none); use the native runtime class for egress",
                    id));
  }
  for (const std::string& layer : spec.layers) {
    RETURN_IF_ERROR(os::CheckLayerDir(layer).WithPrefix("sandbox " + id));
  }
  SandboxSpec canonical = spec;
  for (BindMount& m : canonical.mounts) {
    auto source = native::CanonicalBindSource(m.source);
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
  if (mkdir(dir.c_str(), 0700) != 0) {
    if (errno == EEXIST) {
      return AlreadyExistsError(fmt::format(
          "sandbox {}: {} exists (a sandbox of that id is still on this node: adopt it or "
          "remove the orphan)",
          id, dir));
    }
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, dir), errno);
  }
  auto remove_dir = base::ScopeExit([&] { native::RemoveTree(dir).IgnoreError(); });
  if (mkdir((dir + "/rootfs").c_str(), 0755) != 0) {
    return ErrnoError(fmt::format("sandbox {}: mkdir rootfs", id), errno);
  }
  bool created_writable = mkdir(spec.writable_dir.c_str(), 0711) == 0;
  if (!created_writable && errno != EEXIST) {
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, spec.writable_dir), errno);
  }
  auto remove_writable = base::ScopeExit([&] {
    if (created_writable) native::RemoveTree(spec.writable_dir).IgnoreError();
  });
  for (const char* sub : {"/upper", "/work"}) {
    std::string p = spec.writable_dir + sub;
    if (mkdir(p.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, p), errno);
    }
  }
  sb->record.spec = std::move(canonical);
  sb->record.state = SandboxState::kCreated;
  sb->record.cgroup_version = std::string(os::CgroupVersionName(hierarchies_.version));
  sb->record.created_writable_dir = created_writable;
  sb->record.created_at = clock_.Now();
  RETURN_IF_ERROR(Persist(*sb).WithPrefix("sandbox " + id));
  unreserve.Dismiss();
  remove_dir.Dismiss();
  remove_writable.Dismiss();
  Log()->info("sandbox created id={} runsc_id={}", id, RunscId(id));
  return Status::Ok();
}

Status GvisorRuntime::MountRootfs(const SandboxSpec& spec) {
  const std::string target = SandboxDir(spec.id) + "/rootfs";
  if (IsMounted(target)) UnmountRootfs(spec.id);  // left by a run that ended unseen
  os::OverlayLayers layers;
  for (auto it = spec.layers.rbegin(); it != spec.layers.rend(); ++it) {
    layers.lower_top_first.push_back(*it);
  }
  layers.upper = spec.writable_dir + "/upper";
  layers.work = spec.writable_dir + "/work";
  layers.attrs = MOUNT_ATTR_NODEV;
  int fd = os::MountOverlayRaw(layers, target.c_str());
  if (fd < 0) return ErrnoError(fmt::format("sandbox {}: mount the root overlay", spec.id), -fd);
  close(fd);
  return Status::Ok();
}

void GvisorRuntime::UnmountRootfs(std::string_view id) {
  const std::string target = SandboxDir(id) + "/rootfs";
  // The sandbox's gofer holds its own copy of the mount; the host's is only for starting it.
  while (IsMounted(target)) {
    if (Status s = os::UnmountDetach(target); !s.ok()) {
      Log()->warn("sandbox={} unmount {}: {}", id, target, s.ToString());
      return;
    }
  }
}

Result<os::Pidfd> GvisorRuntime::SpawnShim(const SandboxSpec& spec,
                                           const std::vector<std::string>& command) {
  const std::string dir = SandboxDir(spec.id);
  unlink((dir + "/exit").c_str());
  os::SpawnOptions spawn;
  spawn.argv = {options_.init_path, "shim", "--dir", dir, "--log", spec.log_path, "--"};
  for (std::string& a : RunscArgv(spec.id)) spawn.argv.push_back(std::move(a));
  spawn.argv.insert(spawn.argv.end(), command.begin(), command.end());
  spawn.env = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"};
  spawn.stdin_pipe = false;
  spawn.new_session = true;  // no signal of the server's terminal or group reaches it
  ASSIGN_OR_RETURN(os::SpawnedChild child, os::Spawn(spawn));
  // Our child until reaped, so the pid cannot be reused before this open.
  auto shim = os::Pidfd::Open(child.pid);
  if (!shim.ok()) {
    kill(child.pid, SIGKILL);
    waitpid(child.pid, nullptr, 0);
    return shim.status();
  }
  bool timed_out = false;
  std::string said = Drain(child.stdout_r.get(), shim->fd(),
                           SteadyClock::now() + options_.start_timeout, &timed_out);
  if (said.rfind("ok\n", 0) == 0) return std::move(shim).value();
  // The shim leads its own session: its runsc (create or restore) goes with it, rather than
  // finishing later into a container nobody manages. The caller removes what runsc made.
  kill(-child.pid, SIGKILL);
  shim->SendSignal(SIGKILL).IgnoreError();
  shim->WaitForExit(options_.kill_timeout).IgnoreError();
  shim->TryReap().status().IgnoreError();
  std::string why = LastRunscError(dir + "/runsc.log");
  if (why.empty()) why = std::string(base::TrimSpace(said));
  if (timed_out) {
    return DeadlineExceededError(fmt::format("sandbox {}: runsc {} did not finish in {} ms",
                                             spec.id, command[0], options_.start_timeout.count()));
  }
  return FailedPreconditionError(fmt::format("sandbox {}: runsc {}: {}", spec.id, command[0], why));
}

Status GvisorRuntime::WaitCommandReady(std::string_view id, Millis timeout) {
  auto fd = ConnectShim(SandboxDir(id));
  if (!fd.ok()) return fd.status().WithPrefix(fmt::format("sandbox {}", id));
  auto reply = ShimRequest(fd->get(), "READY\n", timeout);
  if (!reply.ok()) return reply.status().WithPrefix(fmt::format("sandbox {}", id));
  if (reply->rfind("OK", 0) == 0) return Status::Ok();
  if (reply->rfind("ERR exec ", 0) == 0) {
    return FailedPreconditionError(
        fmt::format("sandbox {}: cannot run its command: {}", id, reply->substr(9)));
  }
  return FailedPreconditionError(fmt::format("sandbox {}: ended before its command ran", id));
}

Status GvisorRuntime::PrepareBundleLocked(const Sandbox& sb) {
  const SandboxSpec& spec = sb.record.spec;
  const std::string& id = spec.id;
  OciHost host;
  host.rootfs = SandboxDir(id) + "/rootfs";
  host.init_path = options_.init_path;
  host.cgroups_path = "/" + CgroupPath(id);
  host.nofile_hard = nofile_hard_;
  // Sources are checked at every run as the native runtime does (no symlink on the way;
  // subPath directories made); runsc then opens the path again, so a sandbox that swaps a
  // subPath directory for a symlink between the two is the remaining window.
  for (const BindMount& m : spec.mounts) {
    auto bind = native::ResolveBindSource(m);
    if (!bind.ok()) return bind.status().WithPrefix("sandbox " + id);
    host.bind_sources.push_back(m.sub_path.empty() ? m.source : m.source + "/" + m.sub_path);
  }
  RETURN_IF_ERROR(MountRootfs(spec));
  Status written =
      base::WriteFileAtomically(SandboxDir(id) + "/config.json", BuildOciConfig(spec, host));
  if (!written.ok()) {
    UnmountRootfs(id);
    return written.WithPrefix("sandbox " + id);
  }
  return Status::Ok();
}

void GvisorRuntime::NoteRunningLocked(Sandbox& sb, os::Pidfd shim) {
  const std::string& id = sb.record.spec.id;
  native::SandboxRecord& r = sb.record;
  r.pid = shim.pid();
  r.start_time = os::ProcessStartTime(shim.pid()).value_or(0);
  r.boot_id = os::BootId().value_or("");
  r.state = SandboxState::kRunning;
  sb.killed = false;
  sb.shim = std::move(shim);
  if (Status st = Persist(sb); !st.ok()) {
    Log()->warn("persist sandbox={} error={}", id, st.ToString());
  }
  if (Status st = reaper_->Watch(id, sb.shim->fd()); !st.ok()) {
    Log()->warn("watch sandbox={} error={}", id, st.ToString());
  }
}

Status GvisorRuntime::Start(std::string_view id_view) {
  auto t0 = SteadyClock::now();
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id_view));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id_view));
  const SandboxSpec& spec = sb->record.spec;
  const std::string& id = spec.id;
  if (sb->record.state == SandboxState::kRunning || sb->record.state == SandboxState::kPaused) {
    return FailedPreconditionError(fmt::format("sandbox {} is already running", id));
  }
  if (!spec.restore_image.empty() && sb->record.started_at == base::WallTime{}) {
    // A clone: its first run goes on where the captured sandbox was.
    RETURN_IF_ERROR(RestoreLocked(*sb, spec.restore_image, /*spent=*/false));
    sb->record.started_at = clock_.Now();
    sb->record.last_exit.reset();
    return Persist(*sb);
  }
  RETURN_IF_ERROR(PrepareBundleLocked(*sb));
  auto unmount = base::ScopeExit([&] { UnmountRootfs(id); });
  auto spawned = SpawnShim(spec, {"create", "--bundle", SandboxDir(id), RunscId(id)});
  if (!spawned.ok()) {
    RemoveContainer(id);  // what a runsc create cut short made: state, cgroups, the socket
    return spawned.status();
  }
  os::Pidfd shim = std::move(spawned).value();
  auto remove = base::ScopeExit([&] {
    RemoveContainer(id);
    kill(-shim.pid(), SIGKILL);
    shim.SendSignal(SIGKILL).IgnoreError();
    shim.WaitForExit(options_.kill_timeout).IgnoreError();
    shim.TryReap().status().IgnoreError();
  });
  RETURN_IF_ERROR(Runsc(id, {"start", RunscId(id)}, kRunscTimeout).status());
  auto left = options_.start_timeout - std::chrono::duration_cast<Millis>(SteadyClock::now() - t0);
  RETURN_IF_ERROR(WaitCommandReady(id, std::max(left, Millis(1000))));
  remove.Dismiss();
  unmount.Dismiss();
  sb->record.started_at = clock_.Now();
  sb->record.last_exit.reset();
  NoteRunningLocked(*sb, std::move(shim));
  Log()->info("sandbox started id={} ms={:.1f}", id,
              std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
  return Status::Ok();
}

bool GvisorRuntime::HibernatedLocked(const Sandbox& sb) const {
  return sb.record.state == SandboxState::kPaused && !sb.shim &&
         Exists(CheckpointDir(sb.record.spec.id));
}

Status GvisorRuntime::Hibernate(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::optional<ExitStatus> ended;
  Status st;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    st = HibernateLocked(*sb, ended);
  }
  NotifyExit(std::string(id), ended);
  return st;
}

Status GvisorRuntime::HibernateLocked(Sandbox& sb, std::optional<ExitStatus>& ended) {
  auto t0 = SteadyClock::now();
  const std::string id = sb.record.spec.id;
  if (HibernatedLocked(sb)) return Status::Ok();
  if (!sb.shim) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not running", id, SandboxStateName(sb.record.state)));
  }
  if (sb.record.state == SandboxState::kPaused) {
    RETURN_IF_ERROR(Runsc(id, {"resume", RunscId(id)}, kRunscTimeout).status());
    sb.record.state = SandboxState::kRunning;
    // Recorded: adoption tells a hibernate cut short (running) from a restore (paused).
    RETURN_IF_ERROR(Persist(sb));
  }
  const std::string image = CheckpointDir(id);
  const std::string partial = image + ".partial";
  RETURN_IF_ERROR(native::RemoveTree(image).WithPrefix(fmt::format("sandbox {}", id)));
  RETURN_IF_ERROR(native::RemoveTree(partial).WithPrefix(fmt::format("sandbox {}", id)));
  if (mkdir(partial.c_str(), 0700) != 0) {
    return ErrnoError(fmt::format("sandbox {}: mkdir {}", id, partial), errno);
  }
  // The end of the container that follows is not an exit: nobody is told, nothing recorded.
  reaper_->Unwatch(std::string(id));
  // A shell renames the image into place once runsc says it is whole: it outlives a server
  // killed meanwhile (new session), so adoption tells a finished checkpoint (the image) from
  // one cut short or failed (.partial) without having seen runsc's answer.
  Status saved = Runsc(id, {"checkpoint", "--image-path", partial, RunscId(id)},
                       options_.kill_timeout * 3, /*then_rename=*/std::make_pair(partial, image))
                     .status();
  if (!saved.ok()) {
    native::RemoveTree(partial).IgnoreError();
    // A checkpoint that fails once the Sentry began to save (a socket it cannot write) takes the
    // container down, and the shim sees its pipe close only a moment later: seconds on a loaded
    // host. Asking at once mistook such a container for one still running, whose exit then read
    // as a crash nobody watched. A shim still there after the wait runs as it was.
    if (!sb.shim->WaitForExit(kCheckpointFailureSettle).ok()) {
      reaper_->Watch(std::string(id), sb.shim->fd()).IgnoreError();
      return saved;
    }
  }
  // The Sentry is gone, so the shim sees its pipe close and ends.
  if (!sb.shim->WaitForExit(options_.kill_timeout).ok()) sb.shim->SendSignal(SIGKILL).IgnoreError();
  sb.shim->WaitForExit(options_.kill_timeout).IgnoreError();
  sb.shim->TryReap().status().IgnoreError();
  sb.shim.reset();
  RemoveContainer(id);
  unlink((SandboxDir(id) + "/exit").c_str());
  if (!saved.ok()) {
    // The checkpoint failed and took the container with it: it is stopped.
    sb.record.state = SandboxState::kStopped;
    sb.record.pid = 0;
    ExitStatus unknown;
    unknown.unknown = true;
    sb.record.last_exit = unknown;
    Persist(sb).IgnoreError();
    ended = unknown;
    Log()->warn("sandbox ended by a failed checkpoint id={} error=\"{}\"", id, saved.ToString());
    return saved;
  }
  sb.record.state = SandboxState::kPaused;
  sb.record.pid = 0;
  sb.record.start_time = 0;
  RETURN_IF_ERROR(Persist(sb));
  auto size = native::DiskUsage(image);
  Log()->info("sandbox hibernated id={} image_bytes={} ms={:.1f}", id, size.ok() ? *size : 0,
              std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
  return Status::Ok();
}

Status GvisorRuntime::RestoreLocked(Sandbox& sb, const std::string& image, bool spent) {
  auto t0 = SteadyClock::now();
  const SandboxSpec& spec = sb.record.spec;
  const std::string& id = spec.id;
  if (!Exists(image + "/checkpoint.img")) {
    return FailedPreconditionError(
        fmt::format("sandbox {}: no memory image at {} to restore from", id, image));
  }
  RETURN_IF_ERROR(PrepareBundleLocked(sb));
  auto unmount = base::ScopeExit([&] { UnmountRootfs(id); });
  // --detach: runsc returns once the container runs again; the shim then relays.
  auto spawned = SpawnShim(spec, {"restore", "--detach", "--image-path", image, "--bundle",
                                  SandboxDir(id), RunscId(id)});
  if (!spawned.ok()) {
    // A restore cut short must not come back later unmanaged; the image stays for a retry.
    RemoveContainer(id);
    return spawned.status();
  }
  os::Pidfd shim = std::move(spawned).value();
  unmount.Dismiss();
  NoteRunningLocked(sb, std::move(shim));
  // A hibernate's image is spent: a second restore would fork the sandbox's history.
  if (Status st = spent ? native::RemoveTree(image) : Status::Ok(); !st.ok()) {
    Log()->warn("sandbox={} checkpoint not removed: {}", id, st.ToString());
  }
  Log()->info("sandbox restored id={} image={} ms={:.1f}", id, image,
              std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
  return Status::Ok();
}

Status GvisorRuntime::CaptureMemory(std::string_view id, const std::string& image_dir,
                                    const std::function<Status(const WritableLayerView&)>& read) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::optional<ExitStatus> ended;
  Status st;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    st = CaptureMemoryLocked(*sb, image_dir, read, ended);
  }
  NotifyExit(std::string(id), ended);
  return st;
}

Status GvisorRuntime::CaptureMemoryLocked(
    Sandbox& sb, const std::string& image_dir,
    const std::function<Status(const WritableLayerView&)>& read, std::optional<ExitStatus>& ended) {
  auto t0 = SteadyClock::now();
  const std::string id = sb.record.spec.id;
  if (sb.record.state != SandboxState::kRunning || !sb.shim) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not running: nothing to capture", id,
                    HibernatedLocked(sb) ? "hibernated" : SandboxStateName(sb.record.state)));
  }
  if (image_dir.empty() || image_dir.front() != '/' || !Exists(Parent(image_dir))) {
    return InvalidArgumentError(
        fmt::format("sandbox {}: memory image directory \"{}\" must be absolute, in a directory "
                    "that exists",
                    id, image_dir));
  }
  if (Exists(image_dir)) {
    return AlreadyExistsError(fmt::format("sandbox {}: {} already exists", id, image_dir));
  }
  // Down from here to the restore: a kill -9 in between leaves it hibernated (adoption), to
  // be resumed like any hibernated sandbox, and no image_dir (only its .partial).
  RETURN_IF_ERROR(HibernateLocked(sb, ended));
  const std::string image = CheckpointDir(id);
  const std::string partial = image_dir + ".partial";
  Status captured = native::RemoveTree(partial);
  if (captured.ok() && mkdir(partial.c_str(), 0700) != 0) {
    captured = ErrnoError(fmt::format("sandbox {}: mkdir {}", id, partial), errno);
  }
  // Hard links: the image is written once and never changed (the source's restore only reads
  // it before it is removed), so each of image_dir and the source has it without a copy.
  if (captured.ok()) captured = LinkFiles(image, partial);
  if (captured.ok()) {
    base::UniqueFd upper(
        open((sb.record.spec.writable_dir + "/upper").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!upper) {
      captured = ErrnoError(fmt::format("sandbox {}: open writable layer", id), errno);
    } else {
      captured = read(WritableLayerView{.fd = upper.get()});
    }
  }
  if (captured.ok() && rename(partial.c_str(), image_dir.c_str()) != 0) {
    captured = ErrnoError(fmt::format("sandbox {}: rename {}", id, partial), errno);
  }
  if (!captured.ok()) native::RemoveTree(partial).IgnoreError();
  // The source runs on either way. A restore that fails leaves it hibernated (its image kept),
  // to be resumed again by the caller; the capture itself is whole.
  if (Status back = RestoreLocked(sb, image, /*spent=*/true); !back.ok()) {
    Log()->warn("sandbox not restored after a memory capture id={} error=\"{}\"", id,
                back.ToString());
    if (captured.ok()) return Status::Ok();
  }
  Log()->info("sandbox memory captured id={} image={} ok={} ms={:.1f}", id, image_dir,
              captured.ok(),
              std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
  return captured;
}

Status GvisorRuntime::Pause(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (sb->record.state == SandboxState::kPaused) return Status::Ok();
  if (sb->record.state != SandboxState::kRunning) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not running", id, SandboxStateName(sb->record.state)));
  }
  RETURN_IF_ERROR(Runsc(id, {"pause", RunscId(id)}, kRunscTimeout).status());
  sb->record.state = SandboxState::kPaused;
  return Persist(*sb);
}

Status GvisorRuntime::Resume(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  if (sb->record.state == SandboxState::kRunning) return Status::Ok();
  if (sb->record.state != SandboxState::kPaused) {
    return FailedPreconditionError(
        fmt::format("sandbox {} is {}, not paused", id, SandboxStateName(sb->record.state)));
  }
  if (HibernatedLocked(*sb)) return RestoreLocked(*sb, CheckpointDir(id), /*spent=*/true);
  RETURN_IF_ERROR(Runsc(id, {"resume", RunscId(id)}, kRunscTimeout).status());
  sb->record.state = SandboxState::kRunning;
  return Persist(*sb);
}

void GvisorRuntime::RemoveEmptyCgroups(const std::string& relative) {
  if (relative.empty() || relative.front() == '/' || relative.find("..") != std::string::npos) {
    return;
  }
  auto mounts = os::ReadMountInfo();
  if (!mounts.ok()) return;
  for (const os::MountEntry& m : *mounts) {
    if (m.fs_type != "cgroup" && m.fs_type != "cgroup2") continue;
    rmdir((m.mount_point + "/" + relative).c_str());  // fails harmlessly unless empty
  }
}

void GvisorRuntime::RemoveContainer(std::string_view id) {
  Runsc(id, {"delete", "--force", RunscId(id)}, kRunscTimeout).status().IgnoreError();
  // A runsc create killed before it wrote the container's state leaves its lock file, which
  // delete (finding no container) does not remove.
  const std::string runsc_root = options_.state_dir + "/.runsc";
  const std::string prefix = RunscId(id) + "_sandbox:";
  if (DIR* d = opendir(runsc_root.c_str())) {
    while (dirent* e = readdir(d)) {
      if (std::string_view(e->d_name).starts_with(prefix)) {
        unlinkat(dirfd(d), e->d_name, 0);
      }
    }
    closedir(d);
  }
  UnmountRootfs(id);
  // runsc removes the group it made; what a crash left behind goes here.
  if (auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(id)); cg.ok()) {
    cg->Remove(options_.kill_timeout).IgnoreError();
  }
  RemoveEmptyCgroups(CgroupPath(id));
  const std::string dir = SandboxDir(id);
  unlink((dir + "/mux.sock").c_str());
}

std::optional<ExitStatus> GvisorRuntime::CollectExitLocked(Sandbox& sb) {
  if (!sb.shim || !sb.shim->HasExited()) return std::nullopt;
  const std::string id = sb.record.spec.id;
  reaper_->Unwatch(id);
  sb.shim->TryReap().status().IgnoreError();
  sb.shim.reset();
  const std::string dir = SandboxDir(id);
  ExitStatus exit;
  if (auto e = ReadExitFile(dir + "/exit"); e) {
    exit = *e;
  } else if (sb.killed) {
    exit.signal = SIGKILL;
  } else {
    exit.unknown = true;  // the Sentry went without pid 1 reporting (crash, host kill)
  }
  if (auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(id)); cg.ok()) {
    auto stats = cg->Stats();
    if (stats.ok() && stats->oom_kills > 0) exit.oom_killed = true;
    cg->Release();  // runsc delete removes it
  }
  RemoveContainer(id);
  unlink((dir + "/exit").c_str());
  sb.record.state = SandboxState::kStopped;
  sb.record.pid = 0;
  sb.record.start_time = 0;
  sb.record.last_exit = exit;
  sb.killed = false;
  if (Status st = Persist(sb); !st.ok()) {
    Log()->warn("persist sandbox={} error={}", id, st.ToString());
  }
  Log()->info("sandbox exited id={} code={} signal={} oom={} unknown={}", id, exit.exit_code,
              exit.signal, exit.oom_killed, exit.unknown);
  return exit;
}

void GvisorRuntime::OnProcessExit(const std::string& id) {
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

void GvisorRuntime::KillLocked(Sandbox& sb) {
  const std::string& id = sb.record.spec.id;
  sb.killed = true;
  // pid 1 first: the container ends with it. `--all` alone finds nothing to signal in a clone:
  // its restored processes belong to the container id of the sandbox it was captured from.
  Runsc(id, {"kill", RunscId(id), "KILL"}, kRunscTimeout).status().IgnoreError();
  Runsc(id, {"kill", "--all", RunscId(id), "KILL"}, kRunscTimeout).status().IgnoreError();
  if (sb.shim && sb.shim->WaitForExit(options_.kill_timeout).ok()) return;
  // runsc could not: the Sentry and gofer are host processes of the sandbox's cgroup.
  Log()->warn("sandbox={} did not end on runsc kill; killing its cgroup", id);
  if (auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(id)); cg.ok()) {
    cg->KillAll().IgnoreError();
    cg->Release();
  }
  if (sb.shim) sb.shim->WaitForExit(options_.kill_timeout).IgnoreError();
}

Status GvisorRuntime::Stop(std::string_view id, Millis grace) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::optional<ExitStatus> exit;
  Status result = [&]() -> Status {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (HibernatedLocked(*sb)) {
      // Its processes exist only on disk: they end by being forgotten.
      RETURN_IF_ERROR(native::RemoveTree(CheckpointDir(id)));
      ExitStatus killed;
      killed.signal = SIGKILL;
      sb->record.state = SandboxState::kStopped;
      sb->record.last_exit = killed;
      exit = killed;
      return Persist(*sb);
    }
    if (!sb->shim) return Status::Ok();
    if (sb->record.state == SandboxState::kPaused) {
      RETURN_IF_ERROR(Runsc(id, {"resume", RunscId(id)}, kRunscTimeout).status());
      sb->record.state = SandboxState::kRunning;
    }
    Runsc(id, {"kill", RunscId(id), "TERM"}, kRunscTimeout).status().IgnoreError();
    if (!sb->shim->WaitForExit(grace).ok()) KillLocked(*sb);
    if (!sb->shim->HasExited()) {
      return DeadlineExceededError(fmt::format("sandbox {}: would not stop", id));
    }
    exit = CollectExitLocked(*sb);
    return Status::Ok();
  }();
  NotifyExit(std::string(id), exit);
  return result;
}

Status GvisorRuntime::Destroy(std::string_view id) {
  auto found = Find(id);
  if (!found.ok()) {
    bool any = IsValidSandboxName(id) && Exists(SandboxDir(id));
    if (!any) return found.status();
    return RemoveOrphan(Orphan{std::string(id), SandboxDir(id), "destroy"});
  }
  SandboxPtr sb = *found;
  std::optional<ExitStatus> exit;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (sb->shim) {
      if (sb->record.state == SandboxState::kPaused) {
        Runsc(id, {"resume", RunscId(id)}, kRunscTimeout).status().IgnoreError();
      }
      KillLocked(*sb);
      if (!sb->shim->HasExited()) {
        return DeadlineExceededError(fmt::format("sandbox {}: would not die", id));
      }
      exit = CollectExitLocked(*sb);
    } else {
      RemoveContainer(id);
    }
    RETURN_IF_ERROR(
        native::RemoveTree(sb->record.spec.writable_dir).WithPrefix("sandbox " + std::string(id)));
    RETURN_IF_ERROR(native::RemoveTree(SandboxDir(id)).WithPrefix("sandbox " + std::string(id)));
    sb->gone = true;
    std::lock_guard table_lock(table_mu_);
    table_.erase(std::string(id));
  }
  Log()->info("sandbox destroyed id={}", id);
  NotifyExit(std::string(id), exit);
  return Status::Ok();
}

Result<SandboxStats> GvisorRuntime::Stats(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  SandboxStats s;
  if (sb->shim) {
    if (auto cg = os::Cgroup::Open(hierarchies_, CgroupPath(id)); cg.ok()) {
      auto st = cg->Stats();
      cg->Release();  // runsc owns it
      if (st.ok()) {
        s.cpu_usage_ns = st->cpu_usage_ns;
        s.memory_bytes = st->memory_bytes;
        s.memory_working_set_bytes = st->memory_working_set_bytes;
        s.memory_limit_bytes = st->memory_limit_bytes;
        s.pids = st->pids;
        s.oom_kills = st->oom_kills;
      }
    }
  }
  if (auto disk = native::DiskUsage(sb->record.spec.writable_dir + "/upper"); disk.ok()) {
    s.disk_bytes = *disk;
  }
  return s;
}

Result<SandboxInfo> GvisorRuntime::Inspect(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
  return InfoLocked(*sb);
}

std::vector<SandboxInfo> GvisorRuntime::List() {
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

Result<int> GvisorRuntime::ShimPid(std::string_view id) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  std::lock_guard lock(sb->mu);
  if (sb->gone || !sb->shim) {
    return FailedPreconditionError(fmt::format("sandbox {} is not running", id));
  }
  return static_cast<int>(sb->shim->pid());
}

Result<ExitStatus> GvisorRuntime::Wait(std::string_view id, Millis timeout) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  base::UniqueFd pidfd;
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone) return NotFoundError(fmt::format("sandbox {} not found", id));
    if (!sb->shim) {
      if (sb->record.last_exit) return *sb->record.last_exit;
      return FailedPreconditionError(fmt::format("sandbox {} has not been started", id));
    }
    pidfd = base::UniqueFd(fcntl(sb->shim->fd(), F_DUPFD_CLOEXEC, 0));
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

Result<base::UniqueFd> GvisorRuntime::Dial(std::string_view id, uint16_t port, Millis timeout) {
  ASSIGN_OR_RETURN(SandboxPtr sb, Find(id));
  {
    std::lock_guard lock(sb->mu);
    if (sb->gone || !sb->shim) {
      return FailedPreconditionError(fmt::format("sandbox {} is not running", id));
    }
  }
  auto fd = ConnectShim(SandboxDir(id));
  if (!fd.ok()) return fd.status().WithPrefix(fmt::format("sandbox {}", id));
  auto reply = ShimRequest(fd->get(), fmt::format("DIAL {}\n", port), timeout);
  if (!reply.ok()) return reply.status().WithPrefix(fmt::format("sandbox {}", id));
  if (*reply == "OK") {
    int flags = fcntl(fd->get(), F_GETFL);
    if (flags < 0 || fcntl(fd->get(), F_SETFL, flags | O_NONBLOCK) != 0) {
      return ErrnoError("fcntl O_NONBLOCK", errno);
    }
    return std::move(fd).value();
  }
  int err = reply->rfind("ERR ", 0) == 0
                ? static_cast<int>(base::ParseInt64(reply->substr(4)).value_or(EPROTO))
                : EPROTO;
  if (err == ECONNREFUSED) {
    return UnavailableError(
        fmt::format("sandbox {}: nothing listens on 127.0.0.1:{} inside", id, port));
  }
  return UnavailableError(
      fmt::format("sandbox {}: connect to 127.0.0.1:{} inside: {}", id, port, strerror(err)));
}

void GvisorRuntime::UndoUnfinishedRunLocked(Sandbox& sb) {
  const std::string id = sb.record.spec.id;
  const std::string dir = SandboxDir(id);
  // The shim (`--dir <dir>`, leading its own session) and the runsc it runs (`--bundle <dir>`).
  std::vector<int> found = ProcessesWithArgument(dir);
  for (int pid : found) {
    kill(-pid, SIGKILL);
    auto proc = os::Pidfd::Open(pid);
    if (proc.ok()) {
      proc->SendSignal(SIGKILL).IgnoreError();
      proc->WaitForExit(options_.kill_timeout).IgnoreError();
    }
  }
  if (found.empty() && !IsMounted(dir + "/rootfs")) return;  // nothing began
  RemoveContainer(id);
  unlink((dir + "/exit").c_str());
  Log()->info("sandbox {} the last server did not see through was undone id={}",
              sb.record.state == SandboxState::kPaused ? "restore" : "start", id);
}

void GvisorRuntime::AdoptInterruptedHibernateLocked(Sandbox& sb) {
  const std::string id = sb.record.spec.id;
  const std::string image = CheckpointDir(id);
  const std::string partial = image + ".partial";
  // AdoptOne has waited for a checkpoint still under way.
  if (Exists(image) && !sb.shim->WaitForExit(std::chrono::seconds(3)).ok()) {
    // The Sentry ends right after a save. One still running is a restore's, whose spent image
    // the last server did not get to remove: the sandbox runs on, the image goes.
    auto state = Runsc(id, {"state", RunscId(id)}, kRunscTimeout);
    auto j = state.ok() ? nlohmann::json::parse(*state, nullptr, false) : nlohmann::json();
    const std::string status = j.is_object() ? j.value("status", "") : "";
    if (status == "running" || status == "paused") {
      native::RemoveTree(image).IgnoreError();
      native::RemoveTree(partial).IgnoreError();
      Log()->info("sandbox restored by the last server, its spent image removed id={}", id);
      return;
    }
  }
  if (Exists(image)) {
    // Whole: the Sentry ended after the save, and the sandbox is hibernated.
    if (!sb.shim->WaitForExit(options_.kill_timeout).ok()) {
      sb.shim->SendSignal(SIGKILL).IgnoreError();
    }
    sb.shim->WaitForExit(options_.kill_timeout).IgnoreError();
    sb.shim.reset();
    RemoveContainer(id);
    unlink((SandboxDir(id) + "/exit").c_str());
    native::RemoveTree(partial).IgnoreError();
    sb.record.state = SandboxState::kPaused;
    sb.record.pid = 0;
    sb.record.start_time = 0;
    Log()->info("sandbox hibernated by the last server, adopted so id={}", id);
    return;
  }
  // Cut short before runsc saved anything, or failed: what it wrote goes. A container the
  // failure ended is seen by the reaper as the shim's exit.
  native::RemoveTree(partial).IgnoreError();
  native::RemoveTree(image).IgnoreError();
  Log()->info("sandbox hibernate by the last server did not finish id={} runsc_error=\"{}\"", id,
              LastRunscError(SandboxDir(id) + "/runsc.log"));
}

Result<GvisorRuntime::SandboxPtr> GvisorRuntime::AdoptOne(const std::string& id,
                                                          native::SandboxRecord record) {
  auto sb = std::make_shared<Sandbox>();
  sb->record = std::move(record);
  native::SandboxRecord& r = sb->record;
  const std::string image = CheckpointDir(id);
  if (r.state == SandboxState::kRunning && Exists(image + ".partial")) {
    // A checkpoint still under way (its runsc, or the shell that renames after it, names the
    // partial image): waited for before anything is judged, as the Sentry may already be gone
    // while the image is not yet renamed whole.
    for (int pid : ProcessesWithArgument(image + ".partial")) {
      auto running = os::Pidfd::Open(pid);
      if (running.ok()) running->WaitForExit(options_.kill_timeout * 3).IgnoreError();
    }
  }
  if (r.state == SandboxState::kCreated || r.state == SandboxState::kStopped ||
      (r.state == SandboxState::kPaused && r.pid == 0 && Exists(image))) {
    UndoUnfinishedRunLocked(*sb);
  }
  bool alive = false;
  if ((r.state == SandboxState::kRunning || r.state == SandboxState::kPaused) && r.pid > 0) {
    auto boot = os::BootId();
    auto shim = os::Pidfd::Open(r.pid);
    if (boot.ok() && *boot == r.boot_id && shim.ok() && !shim->HasExited()) {
      auto start = os::ProcessStartTime(r.pid);
      if (start.ok() && *start == r.start_time) {
        alive = true;
        sb->shim = std::move(shim).value();
      }
    }
  }
  if (alive && (Exists(image) || Exists(image + ".partial"))) {
    AdoptInterruptedHibernateLocked(*sb);
    alive = static_cast<bool>(sb->shim);
  } else if (!alive && r.state == SandboxState::kRunning && Exists(image)) {
    // The checkpoint finished (its image was renamed whole) after the server died and took
    // the container with it: hibernated, whatever the record says.
    RemoveContainer(id);
    native::RemoveTree(image + ".partial").IgnoreError();
    r.state = SandboxState::kPaused;
    r.pid = 0;
    r.start_time = 0;
  }
  if (alive) {
    auto state = Runsc(id, {"state", RunscId(id)}, kRunscTimeout);
    auto j = state.ok() ? nlohmann::json::parse(*state, nullptr, false) : nlohmann::json();
    std::string status = j.is_object() ? j.value("status", "") : "";
    r.state = status == "paused" ? SandboxState::kPaused : SandboxState::kRunning;
  } else if (r.state == SandboxState::kPaused && r.pid == 0 && Exists(CheckpointDir(id))) {
    // Hibernated: its processes are on disk, for Resume to restore.
  } else {
    native::RemoveTree(image + ".partial").IgnoreError();
    if (r.state == SandboxState::kRunning || r.state == SandboxState::kPaused) {
      // It ended while nobody watched, or its shim died: what is left of it goes.
      Log()->warn("sandbox ended while no server watched id={} was={} runsc_error=\"{}\"", id,
                  SandboxStateName(r.state), LastRunscError(SandboxDir(id) + "/runsc.log"));
      RemoveContainer(id);
      r.state = SandboxState::kStopped;
      r.pid = 0;
      r.start_time = 0;
      ExitStatus unknown;
      unknown.unknown = true;
      r.last_exit = unknown;
    }
  }
  RETURN_IF_ERROR(Persist(*sb));
  return sb;
}

Result<AdoptionReport> GvisorRuntime::Adopt() {
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
    auto record =
        text.ok() ? native::DecodeRecord(*text) : Result<native::SandboxRecord>(text.status());
    if (!record.ok()) {
      report.orphans.push_back(
          Orphan{name, dir, "unreadable state record: " + record.status().message()});
      continue;
    }
    if (record->spec.id != name) {
      report.orphans.push_back(Orphan{name, dir, "state record names " + record->spec.id});
      continue;
    }
    auto sb = AdoptOne(name, std::move(record).value());
    if (!sb.ok()) {
      report.orphans.push_back(Orphan{name, dir, sb.status().message()});
      continue;
    }
    std::lock_guard lock((*sb)->mu);
    if ((*sb)->shim) {
      if (Status st = reaper_->Watch(name, (*sb)->shim->fd()); !st.ok()) {
        Log()->warn("watch sandbox={} error={}", name, st.ToString());
      }
    }
    report.adopted.push_back(InfoLocked(**sb));
    std::lock_guard table_lock(table_mu_);
    table_.emplace(name, *sb);
  }
  auto groups = os::ListCgroupChildren(hierarchies_, options_.cgroup_parent);
  if (groups.ok()) {
    for (const std::string& name : *groups) {
      {
        std::lock_guard lock(table_mu_);
        if (table_.count(name)) continue;
      }
      if (Exists(SandboxDir(name))) continue;
      report.orphans.push_back(
          Orphan{name, CgroupPath(name), "gVisor sandbox cgroup without a state record"});
    }
  }
  Log()->info("adoption adopted={} orphans={}", report.adopted.size(), report.orphans.size());
  return report;
}

Status GvisorRuntime::RemoveOrphan(const Orphan& orphan) {
  if (!IsValidSandboxName(orphan.id)) {
    if (orphan.id.empty() || orphan.id.find('/') != std::string::npos || orphan.id == "." ||
        orphan.id == "..") {
      return InvalidArgumentError(fmt::format("orphan id '{}' is not removable", orphan.id));
    }
    return native::RemoveTree(SandboxDir(orphan.id));
  }
  {
    std::lock_guard lock(table_mu_);
    if (table_.count(orphan.id)) {
      return FailedPreconditionError(
          fmt::format("sandbox {} is managed, not an orphan: destroy it instead", orphan.id));
    }
  }
  const std::string dir = SandboxDir(orphan.id);
  auto text = base::ReadSmallFile(dir + "/state.json");
  std::optional<native::SandboxRecord> record;
  if (text.ok()) {
    if (auto r = native::DecodeRecord(*text); r.ok() && r->spec.id == orphan.id) record = *r;
  }
  if (Exists(dir)) {
    Runsc(orphan.id, {"kill", "--all", RunscId(orphan.id), "KILL"}, kRunscTimeout)
        .status()
        .IgnoreError();
  }
  RemoveContainer(orphan.id);
  if (record && record->pid > 0) {
    // Its shim, if it still runs, ends with the sandbox; one that is stuck goes now.
    auto shim = os::Pidfd::Open(record->pid);
    auto start = os::ProcessStartTime(record->pid);
    if (shim.ok() && start.ok() && *start == record->start_time) {
      shim->SendSignal(SIGKILL).IgnoreError();
      shim->WaitForExit(options_.kill_timeout).IgnoreError();
      shim->TryReap().status().IgnoreError();
    }
  }
  if (record) RETURN_IF_ERROR(native::RemoveTree(record->spec.writable_dir));
  RETURN_IF_ERROR(native::RemoveTree(dir));
  Log()->info("orphan removed id={} reason={}", orphan.id, orphan.reason);
  return Status::Ok();
}

}  // namespace warren::runtime::gvisor
