#include "runtime/gvisor/oci_config.h"

#include <sys/resource.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/encoding.h"
#include "os/capabilities.h"
#include "os/rlimit.h"

namespace warren::runtime::gvisor {

std::string RunscId(std::string_view sandbox_id) {
  return "w" + base::Sha256Hex(sandbox_id).substr(0, 31);
}

std::string BuildOciConfig(const SandboxSpec& spec, const OciHost& host) {
  using nlohmann::json;
  json process;
  json args = json::array({kInitInSandbox, "init"});
  // runsc gives pid 1 a HOME (root's) when the spec has none; the command must not inherit it.
  if (std::none_of(spec.env.begin(), spec.env.end(),
                   [](const std::string& e) { return e.rfind("HOME=", 0) == 0; })) {
    args.push_back("--unset");
    args.push_back("HOME");
  }
  args.push_back("--");
  for (const std::string& a : spec.command) args.push_back(a);
  process["args"] = args;
  process["env"] = spec.env;
  process["cwd"] = spec.working_dir.empty() ? "/" : spec.working_dir;
  process["user"] = {{"uid", spec.user.uid},
                     {"gid", spec.user.gid},
                     {"additionalGids", spec.user.supplementary_gids}};
  // gVisor refuses raw sockets unless asked (--net-raw); name it out as well.
  std::vector<std::string> caps = os::CapabilityNames(os::SandboxDefaultCapabilities());
  caps.erase(std::remove(caps.begin(), caps.end(), "CAP_NET_RAW"), caps.end());
  std::vector<std::string> held = spec.user.uid == 0 ? caps : std::vector<std::string>{};
  process["capabilities"] = {{"bounding", caps},
                             {"effective", held},
                             {"permitted", held},
                             {"inheritable", json::array()},
                             {"ambient", json::array()}};
  std::vector<os::Rlimit> limits = {
      os::Rlimit{RLIMIT_NOFILE, std::min<uint64_t>(1024, host.nofile_hard), host.nofile_hard}};
  for (const os::Rlimit& l : spec.rlimits) {
    auto same = std::find_if(limits.begin(), limits.end(),
                             [&](const os::Rlimit& x) { return x.resource == l.resource; });
    if (same != limits.end()) {
      *same = l;
    } else {
      limits.push_back(l);
    }
  }
  json rlimits = json::array();
  for (const os::Rlimit& l : limits) {
    rlimits.push_back(
        {{"type", std::string(os::RlimitName(l.resource))}, {"hard", l.hard}, {"soft", l.soft}});
  }
  process["rlimits"] = rlimits;
  process["noNewPrivileges"] = false;

  json mounts = json::array({
      {{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}},
      {{"destination", "/dev"},
       {"type", "tmpfs"},
       {"source", "tmpfs"},
       {"options", {"nosuid", "strictatime", "mode=755", "size=65536k"}}},
      {{"destination", "/dev/pts"},
       {"type", "devpts"},
       {"source", "devpts"},
       {"options", {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}}},
      {{"destination", "/dev/shm"},
       {"type", "tmpfs"},
       {"source", "shm"},
       {"options", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}}},
      {{"destination", "/sys"},
       {"type", "sysfs"},
       {"source", "sysfs"},
       {"options", {"nosuid", "noexec", "nodev", "ro"}}},
      {{"destination", kInitInSandbox},
       {"type", "bind"},
       {"source", host.init_path},
       {"options", {"rbind", "ro", "nodev"}}},
  });
  for (size_t i = 0; i < spec.mounts.size(); ++i) {
    const BindMount& m = spec.mounts[i];
    const std::string& source = i < host.bind_sources.size() ? host.bind_sources[i] : m.source;
    mounts.push_back({{"destination", m.target},
                      {"type", "bind"},
                      {"source", source},
                      {"options", {"rbind", m.read_only ? "ro" : "rw", "nodev"}}});
  }

  json resources = json::object();
  if (spec.resources.memory_bytes > 0) {
    resources["memory"] = {{"limit", spec.resources.memory_bytes}};
  }
  if (spec.resources.cpu_millicores > 0) {
    resources["cpu"] = {{"quota", spec.resources.cpu_millicores * 100}, {"period", 100000}};
  }
  json config = {
      {"ociVersion", "1.0.2"},
      {"process", process},
      {"root", {{"path", host.rootfs}, {"readonly", false}}},
      {"hostname", spec.id},
      {"mounts", mounts},
      {"linux",
       {{"cgroupsPath", host.cgroups_path},
        {"resources", resources},
        {"namespaces", json::array({{{"type", "pid"}},
                                    {{"type", "network"}},
                                    {{"type", "ipc"}},
                                    {{"type", "uts"}},
                                    {{"type", "mount"}}})}}},
  };
  return config.dump(2);
}

}  // namespace warren::runtime::gvisor
