#include "runc_driver.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "base/dir_names.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "os/capabilities.h"
#include "os/seccomp_profile.h"
#include "runtime/native/dir_tree.h"

extern char** environ;

namespace warren::bench {
namespace {

constexpr const char* kRunc = "/usr/sbin/runc";

using nlohmann::json;

json SeccompJson() {
  const os::SeccompProfile& p = os::DockerDefaultSeccompProfile();
  json j;
  j["defaultAction"] = "SCMP_ACT_ERRNO";
  j["defaultErrnoRet"] = p.default_errno;
  j["architectures"] = {"SCMP_ARCH_X86_64", "SCMP_ARCH_X86", "SCMP_ARCH_X32"};
  json calls = json::array();
  for (const os::SeccompRule& r : p.rules) {
    json c;
    std::vector<std::string> names(r.names.begin(), r.names.end());
    c["names"] = names;
    if (r.errno_ret == 0) {
      c["action"] = "SCMP_ACT_ALLOW";
    } else {
      c["action"] = "SCMP_ACT_ERRNO";
      c["errnoRet"] = r.errno_ret;
    }
    json args = json::array();
    for (const os::SeccompArg& a : r.args) {
      json arg;
      arg["index"] = a.index;
      switch (a.op) {
        case os::SeccompOp::kEqual:
          arg["op"] = "SCMP_CMP_EQ";
          arg["value"] = a.value;
          break;
        case os::SeccompOp::kNotEqual:
          arg["op"] = "SCMP_CMP_NE";
          arg["value"] = a.value;
          break;
        case os::SeccompOp::kMaskedEqual:
          arg["op"] = "SCMP_CMP_MASKED_EQ";
          arg["value"] = a.mask;
          arg["valueTwo"] = a.value;
          break;
      }
      args.push_back(arg);
    }
    if (!args.empty()) c["args"] = args;
    calls.push_back(c);
  }
  j["syscalls"] = calls;
  return j;
}

json ConfigJson(const runtime::Resources& r) {
  std::vector<std::string> caps = os::CapabilityNames(os::SandboxDefaultCapabilities());
  json mounts = json::array({
      {{"destination", "/proc"},
       {"type", "proc"},
       {"source", "proc"},
       {"options", {"nosuid", "noexec", "nodev"}}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"},
       {"type", "devpts"},
       {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}}},
      {{"destination", "/dev/shm"},
       {"type", "tmpfs"},
       {"source", "shm"},
       {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
      {{"destination", "/sys"},
       {"type", "sysfs"},
       {"source", "sysfs"},
       {"options", {"nosuid", "noexec", "nodev", "ro"}}},
  });
  json linux;
  linux["namespaces"] = json::array({{{"type", "pid"}},
                                     {{"type", "network"}},
                                     {{"type", "ipc"}},
                                     {{"type", "uts"}},
                                     {{"type", "mount"}},
                                     {{"type", "cgroup"}}});
  linux["maskedPaths"] = {"/proc/acpi",
                          "/proc/asound",
                          "/proc/kcore",
                          "/proc/keys",
                          "/proc/latency_stats",
                          "/proc/timer_list",
                          "/proc/timer_stats",
                          "/proc/sched_debug",
                          "/proc/scsi",
                          "/sys/firmware",
                          "/sys/devices/virtual/powercap"};
  linux["readonlyPaths"] = {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                            "/proc/sysrq-trigger"};
  json res;
  if (r.memory_bytes > 0) res["memory"] = {{"limit", r.memory_bytes}, {"swap", r.memory_bytes}};
  if (r.cpu_millicores > 0) {
    res["cpu"] = {{"quota", r.cpu_millicores * 100}, {"period", 100000}};
  }
  if (r.pids > 0) res["pids"] = {{"limit", r.pids}};
  res["devices"] = json::array({{{"allow", false}, {"access", "rwm"}}});
  linux["resources"] = res;
  linux["seccomp"] = SeccompJson();

  json j;
  j["ociVersion"] = "1.0.2";
  j["root"] = {{"path", "rootfs"}, {"readonly", false}};
  j["process"] = {
      {"terminal", false},
      {"user", {{"uid", 0}, {"gid", 0}}},
      {"args", json::array()},
      {"env", {"PATH=/bin"}},
      {"cwd", "/"},
      {"noNewPrivileges", true},
      {"capabilities", {{"bounding", caps}, {"effective", caps}, {"permitted", caps}}},
      {"rlimits", json::array({{{"type", "RLIMIT_NOFILE"}, {"hard", 20000}, {"soft", 1024}}})},
  };
  j["hostname"] = "runc";
  j["mounts"] = mounts;
  j["linux"] = linux;
  return j;
}

}  // namespace

RuncDriver::RuncDriver(std::string work_dir, std::string layer, runtime::Resources resources)
    : work_dir_(std::move(work_dir)), layer_(std::move(layer)), root_(work_dir_ + "/runc-root") {
  mkdir(root_.c_str(), 0700);
  cgroup_parent_ = fmt::format("warren-bench-runc-{}", getpid());
  config_template_ = ConfigJson(resources).dump();
}

bool RuncDriver::Available() { return access(kRunc, X_OK) == 0; }

Status RuncDriver::Exec(const std::vector<std::string>& args) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // A detached container inherits runc's stdio: never hand it a pipe we wait on.
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return ErrnoError("spawn runc", rc);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return InternalError(fmt::format("{} failed (status {})", base::Join(args, " "), status));
  }
  return Status::Ok();
}

Result<int> RuncDriver::Run(const std::string& id, const std::vector<std::string>& args) {
  std::string b = Bundle(id);
  for (const std::string& d : {b, b + "/rootfs", b + "/upper", b + "/work"}) {
    if (mkdir(d.c_str(), 0755) != 0) return ErrnoError("mkdir " + d, errno);
  }
  std::string opts = fmt::format("lowerdir={},upperdir={}/upper,workdir={}/work", layer_, b, b);
  if (mount("overlay", (b + "/rootfs").c_str(), "overlay", 0, opts.c_str()) != 0) {
    return ErrnoError("mount overlay for runc", errno);
  }
  json config = json::parse(config_template_);
  config["process"]["args"] = args;
  config["linux"]["cgroupsPath"] = "/" + cgroup_parent_ + "/" + id;
  RETURN_IF_ERROR(base::WriteFileAtomically(b + "/config.json", config.dump()));
  std::string pid_file = b + "/pid";
  RETURN_IF_ERROR(
      Exec({kRunc, "--root", root_, "run", "--detach", "--bundle", b, "--pid-file", pid_file, id}));
  ASSIGN_OR_RETURN(std::string pid_text, base::ReadSmallFile(pid_file));
  auto pid = base::ParseInt64(base::TrimSpace(pid_text));
  if (!pid) return InternalError("runc pid file: " + pid_text);
  return static_cast<int>(*pid);
}

Status RuncDriver::Delete(const std::string& id) {
  std::string b = Bundle(id);
  Status st = Exec({kRunc, "--root", root_, "delete", "--force", id});
  umount2((b + "/rootfs").c_str(), MNT_DETACH);
  RETURN_IF_ERROR(runtime::native::RemoveTree(b));
  return st;
}

void RuncDriver::RemoveCgroupParent() {
  // runc places containers in every v1 hierarchy it finds, blkio and cpuset included.
  for (const std::string& h : base::DirNames("/sys/fs/cgroup")) {
    rmdir(fmt::format("/sys/fs/cgroup/{}/{}", h, cgroup_parent_).c_str());
  }
}

Status RuncDriver::Pause(const std::string& id) {
  return Exec({kRunc, "--root", root_, "pause", id});
}

Status RuncDriver::Resume(const std::string& id) {
  return Exec({kRunc, "--root", root_, "resume", id});
}

Result<uint64_t> RuncDriver::MemoryUsage(const std::string& id) {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile("/sys/fs/cgroup/memory/" + cgroup_parent_ +
                                                         "/" + id + "/memory.usage_in_bytes"));
  auto v = base::ParseUint64(base::TrimSpace(text));
  if (!v) return InternalError("memory.usage_in_bytes: " + text);
  return *v;
}

}  // namespace warren::bench
