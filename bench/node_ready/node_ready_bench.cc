// node_ready_bench [--n N] [--image base]: how long a Sandbox object takes to become Running and
// Ready through the node agent (store write → watch → reconcile → runtime → envd /health →
// status write → seen by a store reader), beside the same sandbox made directly with the
// runtime (Create + Start + envd /health through a dial), alternating, in the same run.

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/sandbox_secrets.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"
#include "common/bench_node.h"
#include "image/image_store.h"
#include "node/envd_client.h"
#include "node/node_agent.h"
#include "node/sandbox_plan.h"
#include "runtime/native/native_runtime.h"
#include "store/testing/temp_store.h"

namespace {

using namespace warren;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

std::string Percentiles(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))]; };
  return fmt::format("p50 {:7.2f} ms  p99 {:7.2f} ms  (n={})", at(0.5), at(0.99), v.size());
}

bool Ready(const api::Object& o) {
  auto s = api::DecodeStatus<api::SandboxStatus>(o);
  return s.ok() && s->phase == "Running" && api::IsConditionTrue(s->conditions, "Ready");
}

}  // namespace

int main(int argc, char** argv) {
  int n = 20;
  std::string image = "base";
  CLI::App app{"node_ready_bench: Sandbox object -> Running and Ready, beside the runtime alone"};
  app.add_option("--n", n, "sandboxes of each kind")->check(CLI::Range(1, 1000000));
  app.add_option("--image", image, "image to run (built by scripts/setup-test-env)");
  CLI11_PARSE(app, argc, argv);
  if (geteuid() != 0) {
    fmt::print("node_ready_bench needs root; skipped\n");
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
  const image::ResolvedImage& resolved = bn.image();
  // The reference: a second runtime with its own state dir and cgroup parent.
  runtime::native::NativeRuntimeOptions ro;
  ro.state_dir = o.runtime_state_dir + "-ref";
  ro.cgroup_parent = o.cgroup_parent + "-ref";
  mkdir(ro.state_dir.c_str(), 0711);
  auto rt = runtime::native::NativeRuntime::Create(ro);
  if (!rt.ok()) return 1;

  std::vector<double> via_agent, via_runtime;
  for (int i = 0; i < n + 1; ++i) {  // the first round warms caches and is not counted
    // Through the agent.
    std::string name = fmt::format("bench-{}", i);
    auto doc = api::ParseYaml(fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: {}, namespace: default}}
spec:
  template:
    spec:
      containers: [{{name: main, image: {}, resources: {{limits: {{memory: 256Mi}}}}}}]
)",
                                          name, image));
    auto obj = api::ObjectFromJson(*doc);
    auto t0 = Clock::now();
    auto created = store.Create(*obj);
    if (!created.ok()) return 1;
    auto w =
        store.Watch(&api::SandboxKind(), {.resource_version = created->metadata.resource_version});
    bool ok = false;
    while (!ok && Clock::now() - t0 < 60s) {
      auto ev = (*w)->Next(1s);
      if (!ev.ok()) break;
      if (ev->has_value() && (*ev)->object->metadata.name == name && Ready(*(*ev)->object))
        ok = true;
    }
    auto t1 = Clock::now();
    if (!ok) {
      fmt::print(stderr, "{} never became ready\n", name);
      return 1;
    }
    if (i > 0) via_agent.push_back(Ms(t1 - t0));
    (void)store.Delete(api::SandboxKind(), "default", name);

    // The runtime alone, same envd, image and limit.
    std::string id = fmt::format("iref{:016d}", i);
    runtime::SandboxSpec spec;
    spec.id = id;
    spec.layers = resolved.lower_dirs;
    spec.writable_dir = bn.dir() + "/" + id;
    spec.user_namespace = o.user_namespace;
    spec.resources.memory_bytes = 256 << 20;
    spec.mounts = {{o.envd_path, node::kEnvdInSandbox, true}};
    spec.command = {node::kEnvdInSandbox, "--log-level", "warn"};
    auto r0 = Clock::now();
    if (!(*rt)->Create(spec).ok() || !(*rt)->Start(id).ok()) return 1;
    runtime::Runtime* raw = rt->get();
    node::EnvdClient envd(
        [raw, id](std::chrono::milliseconds t) { return raw->Dial(id, node::kEnvdPort, t); }, "x");
    while (!envd.Health(1s).ok() && Clock::now() - r0 < 30s) std::this_thread::sleep_for(1ms);
    auto r1 = Clock::now();
    if (i > 0) via_runtime.push_back(Ms(r1 - r0));
    (void)(*rt)->Destroy(id);
  }
  // Let the agent finish the deletions before it stops.
  for (int i = 0; i < 600 && !agent.List().empty(); ++i) std::this_thread::sleep_for(50ms);
  fmt::print("sandbox ready, image {} (userns {}):\n", image, o.user_namespace);
  fmt::print("  through the node agent (object → Running+Ready seen by a watch): {}\n",
             Percentiles(via_agent));
  fmt::print("  reference, runtime alone (Create + Start + envd /health):       {}\n",
             Percentiles(via_runtime));
  agent.Stop();
  auto ref_cgroups = (*rt)->cgroups().DirsFor(ro.cgroup_parent);
  rt->reset();
  for (const auto& d : ref_cgroups) rmdir(d.c_str());
  rmdir((ro.state_dir + "/.idmap").c_str());
  rmdir(ro.state_dir.c_str());
  return 0;
}
