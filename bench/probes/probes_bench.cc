// probes_bench [--sandboxes N] [--period S] [--seconds W]: what an exec probe costs the host when
// N idle sandboxes each run one every S seconds through the node agent (envd's process service,
// authenticated by the node secret), in CPU per probe run: the agent's own CPU (its probe
// threads and the HTTP to envd) plus the sandboxes' cgroups (envd spawning and reaping the
// command), over a window of W seconds, less the same N sandboxes idle without probes over the
// same window. Beside it, in the same run: the same command entered into one of the sandboxes
// directly (`nsenter -t <pid 1> -a true`, fork + setns + exec) and spawned on the host
// (fork + exec of /bin/true), CPU per run from the children's rusage.

#include <fmt/format.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <fstream>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "common/bench_node.h"
#include "node/node_agent.h"
#include "os/cgroup.h"

extern char** environ;

namespace {

using namespace warren;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double CpuSeconds(const rusage& r) {
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

double SelfCpu() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return CpuSeconds(r);
}

double ChildrenCpu() {
  rusage r{};
  getrusage(RUSAGE_CHILDREN, &r);
  return CpuSeconds(r);
}

// CPU seconds used by every sandbox under the agent's cgroup parent (cgroup v1 cpuacct, else
// v2 cpu.stat).
double SandboxesCpu(const std::string& cgroup_parent) {
  auto h = os::CgroupHierarchies::Detect();
  if (!h.ok()) return 0;
  for (const std::string& dir : h->DirsFor(cgroup_parent)) {
    std::ifstream acct(dir + "/cpuacct.usage");
    uint64_t ns = 0;
    if (acct >> ns) return static_cast<double>(ns) / 1e9;
    std::ifstream stat(dir + "/cpu.stat");
    std::string key;
    uint64_t value = 0;
    while (stat >> key >> value) {
      if (key == "usage_usec") return static_cast<double>(value) / 1e6;
    }
  }
  return 0;
}

std::string Manifest(int i, const std::string& image, int period, bool probed) {
  std::string probes;
  if (probed) {
    probes = fmt::format(
        "  probes:\n  - {{name: p, exec: {{command: [\"true\"]}}, periodSeconds: {}}}\n", period);
  }
  return fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: bench-{}, namespace: default}}
spec:
{}  template:
    spec:
      containers:
      - {{name: main, image: {}, command: ["sleep", "1000000"], resources: {{limits: {{memory: 64Mi}}}}}}
)",
                     i, probes, image);
}

// Counts the sandboxes that are Running and Ready (and, when probed, have reported their probe).
int CountReady(store::Store& store, bool probed) {
  auto list = store.List(api::SandboxKind(), {.namespace_ = "default"});
  if (!list.ok()) return 0;
  int n = 0;
  for (const api::Object& o : list->items) {
    auto s = api::DecodeStatus<api::SandboxStatus>(o);
    if (!s.ok() || s->phase != "Running" || !api::IsConditionTrue(s->conditions, "Ready")) continue;
    if (probed && !api::FindCondition(s->conditions, "agents.kruise.io/p")) continue;
    ++n;
  }
  return n;
}

bool CreateAll(store::Store& store, int n, const std::string& image, int period, bool probed) {
  for (int i = 0; i < n; ++i) {
    auto doc = api::ParseYaml(Manifest(i, image, period, probed));
    auto obj = api::ObjectFromJson(*doc);
    if (!obj.ok() || !store.Create(*obj).ok()) return false;
  }
  const auto t0 = Clock::now();
  int ready = 0;
  while ((ready = CountReady(store, probed)) < n && Clock::now() - t0 < 20min) {
    std::this_thread::sleep_for(500ms);
  }
  fmt::print("  {} sandboxes{} running and ready in {:.1f} s\n", ready, probed ? " (probed)" : "",
             std::chrono::duration<double>(Clock::now() - t0).count());
  return ready == n;
}

void DeleteAll(store::Store& store, node::NodeAgent& agent, int n) {
  for (int i = 0; i < n; ++i)
    (void)store.Delete(api::SandboxKind(), "default", fmt::format("bench-{}", i));
  for (int i = 0; i < 12000 && !agent.List().empty(); ++i) std::this_thread::sleep_for(50ms);
}

struct Window {
  double agent_cpu = 0;
  double sandboxes_cpu = 0;
  uint64_t runs = 0;
};

Window Measure(node::NodeAgent& agent, const std::string& cgroup_parent, int seconds) {
  const double a0 = SelfCpu(), s0 = SandboxesCpu(cgroup_parent);
  const uint64_t r0 = agent.ProbeRuns();
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  return {SelfCpu() - a0, SandboxesCpu(cgroup_parent) - s0, agent.ProbeRuns() - r0};
}

// CPU per run of `argv` spawned `runs` times, waited for each.
double SpawnCpuPerRun(const std::vector<std::string>& argv, int runs) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const double c0 = ChildrenCpu();
  for (int i = 0; i < runs; ++i) {
    pid_t pid = 0;
    if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return -1;
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return -1;
  }
  return (ChildrenCpu() - c0) / runs;
}

}  // namespace

int main(int argc, char** argv) {
  int sandboxes = 1000, period = 10, seconds = 30, reference_runs = 500;
  std::string image = "busybox";
  CLI::App app{"probes_bench: CPU per exec probe run on idle sandboxes, beside nsenter"};
  app.add_option("--sandboxes", sandboxes, "idle sandboxes, each with one exec probe")
      ->check(CLI::Range(1, 100000));
  app.add_option("--period", period, "the probe's periodSeconds")->check(CLI::Range(1, 3600));
  app.add_option("--seconds", seconds, "measuring window (each of the two)")
      ->check(CLI::Range(1, 3600));
  app.add_option("--reference-runs", reference_runs, "spawns of each reference")
      ->check(CLI::Range(1, 1000000));
  app.add_option("--image", image, "image to run");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    fmt::print("probes_bench needs root; skipped\n");
    return 77;
  }
  auto started = bench::BenchNode::Start(WARREN_ENVD_BIN, image);
  if (!started.ok()) {
    fmt::print(stderr, "{}\n", started.status().ToString());
    return 1;
  }
  bench::BenchNode& bn = **started;
  const node::NodeAgentOptions& o = bn.options();
  node::NodeAgent& agent = bn.agent();
  store::Store& store = bn.store();

  fmt::print(
      "probes_bench: {} sandboxes ({}), exec probe `true` every {} s, windows of {} s, "
      "{} cores, load {}\n",
      sandboxes, image, period, seconds, std::thread::hardware_concurrency(),
      base::TrimSpace(base::ReadSmallFile("/proc/loadavg").value_or("?")));
  int rc = 0;
  // The same sandboxes without probes: what idling costs, taken off the probed window.
  if (!CreateAll(store, sandboxes, image, period, false)) rc = 1;
  std::this_thread::sleep_for(2s);  // let creation's tail settle
  const Window idle = rc == 0 ? Measure(agent, o.cgroup_parent, seconds) : Window{};
  DeleteAll(store, agent, sandboxes);
  if (rc == 0 && !CreateAll(store, sandboxes, image, period, true)) rc = 1;
  std::this_thread::sleep_for(std::chrono::seconds(std::min(period, 10)));
  const Window probed = rc == 0 ? Measure(agent, o.cgroup_parent, seconds) : Window{};

  // References, on one of the probed sandboxes (its pid 1's namespaces).
  double nsenter = -1, host = -1;
  if (rc == 0) {
    auto refs = agent.List();
    auto info =
        refs.empty() ? NotFoundError("no sandbox") : agent.runtime().Inspect(refs[0].sandbox_id);
    if (info.ok()) {
      nsenter = SpawnCpuPerRun({"nsenter", "-t", std::to_string(info->pid), "-a", "true"},
                               reference_runs);
    }
    host = SpawnCpuPerRun({"/bin/true"}, reference_runs);
  }
  DeleteAll(store, agent, sandboxes);
  agent.Stop();
  if (rc != 0) return rc;

  const double expected = static_cast<double>(sandboxes) * seconds / period;
  const double extra =
      (probed.agent_cpu + probed.sandboxes_cpu) - (idle.agent_cpu + idle.sandboxes_cpu);
  const double runs = static_cast<double>(std::max<uint64_t>(probed.runs, 1));
  fmt::print("  idle window:   agent {:.3f} s CPU, sandboxes {:.3f} s CPU\n", idle.agent_cpu,
             idle.sandboxes_cpu);
  fmt::print(
      "  probed window: agent {:.3f} s CPU, sandboxes {:.3f} s CPU, {} probe runs "
      "(expected {:.0f})\n",
      probed.agent_cpu, probed.sandboxes_cpu, probed.runs, expected);
  fmt::print(
      "  per probe run: {:.3f} ms CPU (agent {:.3f} + in the sandbox {:.3f}); "
      "{:.2f} % of one core for all {} sandboxes\n",
      extra / runs * 1e3, (probed.agent_cpu - idle.agent_cpu) / runs * 1e3,
      (probed.sandboxes_cpu - idle.sandboxes_cpu) / runs * 1e3, extra / seconds * 100, sandboxes);
  fmt::print("  reference, `nsenter -t <pid> -a true` into a sandbox: {:.3f} ms CPU per run\n",
             nsenter * 1e3);
  fmt::print("  reference, fork + exec of /bin/true on the host:      {:.3f} ms CPU per run\n",
             host * 1e3);
  return 0;
}
