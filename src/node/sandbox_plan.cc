#include "node/sandbox_plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>

#include "api/resources.h"
#include "base/strings.h"
#include "node/reasons.h"

namespace warren::node {
namespace {

constexpr int64_t kMinCpuMillicores = 10;     // the runtime's floor (CFS quota)
constexpr int64_t kMinMemoryBytes = 4 << 20;  // the runtime's floor
// Room for the sandbox's log files and the subvolume's own metadata.
constexpr int64_t kMinEphemeralStorageBytes = 1 << 20;
constexpr const char* kEnvdLogLevel = "warn";  // pid 1's log goes to a host file: keep it small

PlanOutcome Fail(std::string reason, std::string message) {
  PlanOutcome out;
  out.failure = Failure{std::move(reason), std::move(message), true};
  return out;
}

// Kubernetes' quantity spelling for messages: what the user wrote.
std::string Text(const api::Quantity& q) { return q.ToString(); }

std::string HumanBytes(int64_t bytes) {
  if (bytes % (int64_t{1} << 30) == 0) return fmt::format("{}Gi", bytes >> 30);
  if (bytes % (int64_t{1} << 20) == 0) return fmt::format("{}Mi", bytes >> 20);
  return fmt::format("{}", bytes);
}

// "KEY=VALUE" list → map (later wins), keeping the first-seen order irrelevant: envd sorts.
void MergeEnv(std::map<std::string, std::string>& env, const std::vector<std::string>& kvs) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

std::vector<std::string> TemplateCommand(const api::Container& c, const image::ImageConfig& img) {
  std::vector<std::string> out;
  if (!c.command.empty()) {
    out = c.command;
    out.insert(out.end(), c.args.begin(), c.args.end());
  } else if (!c.args.empty()) {
    out = img.entrypoint;
    out.insert(out.end(), c.args.begin(), c.args.end());
  } else if (!img.entrypoint.empty()) {
    out = img.entrypoint;
    out.insert(out.end(), img.cmd.begin(), img.cmd.end());
  }
  return out;
}

std::optional<Failure> PlanEphemeralStorage(const api::Container& c, const PlanInput& in,
                                            const std::string& path, int64_t& out) {
  const api::Quantity* named = api::EffectiveResource(c.resources, "ephemeral-storage");
  if (!in.ephemeral_storage_unenforced.empty()) {
    if (named) {
      return Failure{reasons::kEphemeralStorageNotEnforced,
                     fmt::format("{}: ephemeral-storage {} cannot be enforced on this node: {}",
                                 path, Text(*named), in.ephemeral_storage_unenforced)};
    }
    out = 0;
    return std::nullopt;
  }
  if (auto it = c.resources.requests.find("ephemeral-storage");
      it != c.resources.requests.end() && in.capacity.ephemeral_storage_bytes > 0 &&
      it->second.Value() > in.capacity.ephemeral_storage_bytes) {
    return Failure{
        reasons::kInvalidResources,
        fmt::format("{}: ephemeral-storage request {} exceeds this node's sandbox "
                    "storage ({})",
                    path, Text(it->second), HumanBytes(in.capacity.ephemeral_storage_bytes))};
  }
  out = in.defaults.ephemeral_storage_bytes;
  if (named) {
    if (named->Value() < kMinEphemeralStorageBytes) {
      return Failure{reasons::kInvalidResources,
                     fmt::format("{}: ephemeral-storage {} is below the minimum of 1Mi a sandbox "
                                 "can run with",
                                 path, Text(*named))};
    }
    out = named->Value();
  }
  return std::nullopt;
}

std::optional<Failure> PlanResources(const api::Container& c, const PlanInput& in,
                                     runtime::Resources& out, int64_t& ephemeral_storage) {
  static const std::set<std::string> kKnown = {"cpu", "memory", "ephemeral-storage"};
  const std::string path = fmt::format("containers[{}].resources", c.name);
  for (const auto* m : {&c.resources.limits, &c.resources.requests}) {
    for (const auto& [name, q] : *m) {
      if (!kKnown.count(name)) {
        return Failure{reasons::kInvalidResources,
                       fmt::format("{}: resource \"{}\" is not available on this node (it offers "
                                   "cpu, memory and ephemeral-storage)",
                                   path, name)};
      }
    }
  }
  if (auto it = c.resources.requests.find("cpu");
      it != c.resources.requests.end() && in.capacity.cpu_millicores > 0 &&
      it->second.MilliValue() > in.capacity.cpu_millicores) {
    return Failure{reasons::kInvalidResources,
                   fmt::format("{}: cpu request {} exceeds this node's {} CPUs", path,
                               Text(it->second), in.capacity.cpu_millicores / 1000)};
  }
  if (auto it = c.resources.requests.find("memory");
      it != c.resources.requests.end() && in.capacity.memory_bytes > 0 &&
      it->second.Value() > in.capacity.memory_bytes) {
    return Failure{reasons::kInvalidResources,
                   fmt::format("{}: memory request {} exceeds this node's memory ({})", path,
                               Text(it->second), HumanBytes(in.capacity.memory_bytes))};
  }

  out.cpu_millicores = in.defaults.cpu_millicores;
  if (const api::Quantity* cpu = api::EffectiveResource(c.resources, "cpu")) {
    if (cpu->MilliValue() < kMinCpuMillicores) {
      return Failure{reasons::kInvalidResources,
                     fmt::format("{}: cpu {} is below the minimum of {}m a sandbox can run with",
                                 path, Text(*cpu), kMinCpuMillicores)};
    }
    out.cpu_millicores = cpu->MilliValue();
  }
  out.memory_bytes = in.defaults.memory_bytes;
  if (const api::Quantity* mem = api::EffectiveResource(c.resources, "memory")) {
    if (mem->Value() < kMinMemoryBytes) {
      return Failure{reasons::kInvalidResources,
                     fmt::format("{}: memory {} is below the minimum of 4Mi a sandbox can run "
                                 "with",
                                 path, Text(*mem))};
    }
    out.memory_bytes = mem->Value();
  }
  out.pids = in.defaults.pids;
  return PlanEphemeralStorage(c, in, path, ephemeral_storage);
}

std::optional<Failure> PlanVolumes(const api::PodSpec& pod, const api::Container& c,
                                   const PlanInput& in, SandboxPlan& plan) {
  std::map<std::string, const api::Volume*> volumes;
  for (const auto& v : pod.volumes) volumes[v.name] = &v;
  for (const api::VolumeMount& m : c.volume_mounts) {
    auto it = volumes.find(m.name);
    if (it == volumes.end()) {
      return Failure{reasons::kInvalidVolume,
                     fmt::format("volumeMount \"{}\" names no volume of the template", m.name)};
    }
    if (m.sub_path.find("..") != std::string::npos ||
        (!m.sub_path.empty() && m.sub_path.front() == '/')) {
      return Failure{reasons::kInvalidVolume,
                     fmt::format("volumeMount \"{}\": subPath \"{}\" must be relative without "
                                 "'..'",
                                 m.name, m.sub_path)};
    }
    const api::Volume& v = *it->second;
    std::string source;
    bool read_only = m.read_only;
    if (v.empty_dir) {
      source = in.paths.volumes + "/" + v.name;
      plan.host_paths.push_back({v.name, source, HostPath::Kind::kEmptyDir});
    } else if (v.host_path) {
      HostPath::Kind kind = HostPath::Kind::kExisting;
      const std::string& t = v.host_path->type;
      if (t == "DirectoryOrCreate") kind = HostPath::Kind::kDirectoryOrCreate;
      if (t == "Directory") kind = HostPath::Kind::kDirectory;
      if (t == "FileOrCreate") kind = HostPath::Kind::kFileOrCreate;
      if (t == "File") kind = HostPath::Kind::kFile;
      plan.host_paths.push_back({v.name, v.host_path->path, kind});
      source = v.host_path->path;
    } else if (v.persistent_volume_claim) {
      auto dir = in.persistent_volumes.find(v.persistent_volume_claim->claim_name);
      if (dir == in.persistent_volumes.end()) {
        return Failure{reasons::kInvalidVolume,
                       fmt::format("volume \"{}\": Volume \"{}\" is not attached", v.name,
                                   v.persistent_volume_claim->claim_name)};
      }
      source = dir->second;
      if (v.persistent_volume_claim->read_only) read_only = true;
    } else {
      return Failure{reasons::kInvalidVolume,
                     fmt::format("volume \"{}\" has no source Warren supports (emptyDir, hostPath, "
                                 "persistentVolumeClaim)",
                                 v.name)};
    }
    // The subPath is the runtime's to resolve (and make) beneath the volume at every Start,
    // without following symlinks the sandbox may have planted in the volume.
    plan.spec.mounts.push_back(
        runtime::BindMount{std::move(source), m.mount_path, read_only, m.sub_path});
  }
  return std::nullopt;
}

}  // namespace

NodeCapacity ReadNodeCapacity() {
  NodeCapacity c;
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0) c.cpu_millicores = cpus * 1000;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (meminfo >> key >> kb >> unit) {
    if (key == "MemTotal:") {
      c.memory_bytes = kb * 1024;
      break;
    }
  }
  return c;
}

PlanOutcome PlanSandbox(const PlanInput& in) {
  const api::PodSpec& pod = in.pod.spec;
  if (pod.containers.empty()) {
    return Fail(reasons::kInvalidTemplate, "the template has no containers");
  }
  const std::vector<std::string> classes = in.runtime_classes.empty()
                                               ? std::vector<std::string>{api::kRuntimeNative}
                                               : in.runtime_classes;
  if (!pod.runtime_class_name.empty() &&
      std::find(classes.begin(), classes.end(), pod.runtime_class_name) == classes.end()) {
    return Fail(reasons::kRuntimeClassNotAvailable,
                fmt::format("runtimeClassName \"{}\" is not available on this node (it runs "
                            "\"{}\")",
                            pod.runtime_class_name, fmt::join(classes, "\", \"")));
  }
  SandboxPlan plan;
  plan.spec.runtime_class =
      pod.runtime_class_name.empty() ? classes.front() : pod.runtime_class_name;
  if (in.restart_policy.empty() || in.restart_policy == "Always") {
    plan.restart_policy = RestartPolicy::kAlways;
  } else if (in.restart_policy == "OnFailure") {
    plan.restart_policy = RestartPolicy::kOnFailure;
  } else if (in.restart_policy == "Never") {
    plan.restart_policy = RestartPolicy::kNever;
  } else {
    return Fail(reasons::kInvalidTemplate,
                fmt::format("restartPolicy \"{}\" is not one of Always, OnFailure, Never",
                            in.restart_policy));
  }
  const api::Container& c = pod.containers.front();
  runtime::SandboxSpec& spec = plan.spec;
  spec.id = in.sandbox_id;
  spec.layers = in.layers;
  spec.writable_dir = in.paths.writable;
  spec.user_namespace = in.user_namespace;
  if (in.pool_stock) spec.cpu_weight = kPoolStockCpuWeight;
  spec.log_path = in.paths.envd_log;
  spec.working_dir = "/";
  spec.user = runtime::User{0, 0, {}};  // envd is root in its sandbox; the command's user below

  if (auto f = PlanResources(c, in, spec.resources, plan.ephemeral_storage_bytes)) {
    PlanOutcome out;
    out.failure = *f;
    return out;
  }
  if (auto f = PlanVolumes(pod, c, in, plan)) {
    PlanOutcome out;
    out.failure = *f;
    return out;
  }
  spec.mounts.insert(
      spec.mounts.begin(),
      {runtime::BindMount{spec.runtime_class == api::kRuntimeGvisor && !in.envd_gvisor_path.empty()
                              ? in.envd_gvisor_path
                              : in.envd_path,
                          kEnvdInSandbox, true},
       runtime::BindMount{in.paths.log_dir, kLogDirInSandbox, false}});
  plan.init_channel = spec.runtime_class != api::kRuntimeGvisor;
  if (plan.init_channel) {
    spec.mounts.push_back(runtime::BindMount{in.paths.init_dir, kInitDirInSandbox, true});
  }
  if (!in.resolv_conf.empty()) {
    spec.egress = true;
    spec.egress_policy = in.egress_policy;
    spec.mounts.push_back(runtime::BindMount{in.resolv_conf, "/etc/resolv.conf", true});
  }

  std::map<std::string, std::string> env;
  MergeEnv(env, in.image.env);
  for (const api::EnvVar& e : c.env) env[e.name] = e.value;
  if (!env.count("PATH"))
    env["PATH"] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& [k, v] : env) spec.env.push_back(k + "=" + v);
  spec.env.push_back("WARREN_ENVD_NODE_SECRET=" + in.node_secret);
  if (!in.birth_token.empty()) spec.env.push_back("WARREN_ENVD_ACCESS_TOKEN=" + in.birth_token);

  std::string user = in.image.user.empty() ? "root" : in.image.user;
  if (auto colon = user.find(':'); colon != std::string::npos) user = user.substr(0, colon);
  std::string workdir = !c.working_dir.empty() ? c.working_dir : in.image.working_dir;

  plan.command = TemplateCommand(c, in.image);
  spec.command = {kEnvdInSandbox,
                  "--listen",
                  fmt::format("0.0.0.0:{}", kEnvdPort),
                  "--inherit-env",
                  "--log-level",
                  kEnvdLogLevel,
                  "--command-log",
                  fmt::format("{}/{}", kLogDirInSandbox, kCommandLogName),
                  "--audit-log",
                  fmt::format("{}/{}", kLogDirInSandbox, kEnvdAuditLogName),
                  "--default-user",
                  user,
                  "--command-user",
                  user};
  if (plan.init_channel) {
    spec.command.push_back("--init-dir");
    spec.command.push_back(kInitDirInSandbox);
  }
  if (in.envd_spans) {
    spec.command.push_back("--span-log");
    spec.command.push_back(fmt::format("{}/{}", kLogDirInSandbox, kEnvdSpanLogName));
  }
  if (!workdir.empty()) {
    spec.command.push_back("--default-workdir");
    spec.command.push_back(workdir);
  }
  if (!plan.command.empty()) {
    spec.command.push_back("--exit-with-command");
    spec.command.push_back("--");
    spec.command.insert(spec.command.end(), plan.command.begin(), plan.command.end());
  }
  plan.host_paths.insert(plan.host_paths.begin(),
                         HostPath{"", in.paths.log_dir, HostPath::Kind::kEmptyDir});

  if (Status s = runtime::ValidateSpec(spec); !s.ok()) {
    return Fail(s.message().find("resources") != std::string::npos ? reasons::kInvalidResources
                                                                   : reasons::kInvalidTemplate,
                s.message());
  }
  PlanOutcome out;
  out.plan = std::move(plan);
  return out;
}

}  // namespace warren::node
