// The node agent making real sandboxes: Running and Ready, envd through a dial, logs, stats,
// pause (frozen) and resume, delete (nothing left), restart policies, templateRef.

#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/yaml_codec.h"
#include "envd/init_channel.h"
#include "net/http_client.h"
#include "node_fixture.h"
#include "os/btrfs.h"
#include "os/cgroup.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

std::string WaitLog(NodeAgent& agent, const std::string& id, const std::string& part,
                    std::chrono::seconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string text;
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto fd = agent.OpenCommandLog(id); fd.ok()) {
      text = ReadAll(fd->get());
      if (Contains(text, part)) return text;
    }
    std::this_thread::sleep_for(20ms);
  }
  ADD_FAILURE() << "log of " << id << " never showed \"" << part << "\"; it is: " << text;
  return text;
}

TEST_F(NodeTest, RunsDialsLogsPausesResumesAndDeletesWithoutLeftovers) {
  StartAgent();
  api::Object created = Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: life, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: main
        image: base
        command: ["/bin/sh", "-c", "echo hello from the template; echo FOO=$FOO; exec sleep 3600"]
        env: [{name: FOO, value: bar}]
        resources: {limits: {cpu: 500m, memory: 256Mi}}
)");
  const std::string id = SandboxId(created);
  ASSERT_FALSE(id.empty()) << "admission gives every Sandbox a sandbox id";
  api::Object running = WaitPhase("life", "Running");
  EXPECT_EQ(running.status()["nodeName"], "test-node");
  EXPECT_EQ(running.status()["observedGeneration"], running.metadata.generation);
  EXPECT_TRUE(running.status().contains("startTime"));
  EXPECT_EQ(ConditionReason(running, "Ready"), "SandboxReady");
  EXPECT_TRUE(running.HasFinalizer("agents.kruise.io/sandbox"));

  // envd answers through the agent's dial, by E2B sandbox id.
  auto fd = agent_->Dial(id, 49983, 2s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string resp = RawHttp(fd->get(), "GET /health HTTP/1.0\r\nHost: envd\r\n\r\n");
  EXPECT_TRUE(Contains(resp, "HTTP/1.1 204")) << resp;
  EXPECT_TRUE(Contains(resp, "X-Envd-Version")) << resp;
  // The gateway's loop dial reaches the same envd.
  for (int i = 0; i < 100; ++i) {
    auto now = agent_->DialNow(id, 49983);
    if (!now) continue;  // the agent was busy: the gateway would dial on a thread
    ASSERT_TRUE(now->ok()) << now->status();
    std::string r2 = RawHttp((*now)->get(), "GET /health HTTP/1.0\r\nHost: envd\r\n\r\n");
    EXPECT_TRUE(Contains(r2, "HTTP/1.1 204")) << r2;
    break;
  }
  auto envd = agent_->Envd(id);
  ASSERT_TRUE(envd.ok()) << envd.status();
  ASSERT_OK((*envd)->Init(R"({"envVars":{"ADDED":"1"}})", 5s));

  // The template command's output, with the container's env; from envd and from the file.
  std::string file_log = WaitLog(*agent_, id, "FOO=bar");
  EXPECT_TRUE(Contains(file_log, "hello from the template\n")) << file_log;
  auto logs = (*envd)->Logs(5s);
  ASSERT_TRUE(logs.ok()) << logs.status();
  EXPECT_EQ(*logs, file_log);

  // Stats every 200 ms here (5 s by default): the limit and some memory in use.
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (agent_->Metrics(id).size() < 3 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  auto samples = agent_->Metrics(id);
  ASSERT_GE(samples.size(), 3u);
  EXPECT_EQ(samples.back().memory_limit_bytes, 256u << 20);
  EXPECT_EQ(samples.back().cpu_count, 1) << "cpu: 500m is one CPU, rounded up";
  EXPECT_GT(samples.back().memory_bytes, 0u);
  EXPECT_GE(samples.back().pids, 2u);  // envd and sleep
  EXPECT_LE(samples.front().time, samples.back().time);

  // A spec change the node has nothing to do for (a claim's shutdown time) costs no status
  // write: observedGeneration goes with the next real change (the pause below).
  const int64_t observed = running.metadata.generation;
  Patch("life", R"({"spec":{"shutdownTime":"2099-01-01T00:00:00Z"}})");
  std::this_thread::sleep_for(500ms);
  auto timed = store_->store().Get(api::SandboxKind(), "default", "life");
  ASSERT_TRUE(timed.ok()) << timed.status();
  ASSERT_GT(timed->metadata.generation, observed);
  EXPECT_EQ(timed->status()["observedGeneration"], observed);

  // Pause: every process frozen, envd silent, dialing refused.
  const std::vector<int> pids = SandboxPids(Options(), id);
  ASSERT_FALSE(pids.empty());
  Patch("life", R"({"spec":{"paused":true}})");
  api::Object paused = WaitPhase("life", "Paused");
  EXPECT_EQ(paused.status()["observedGeneration"], paused.metadata.generation);
  EXPECT_EQ(ConditionStatus(paused, "SandboxPaused"), "True");
  EXPECT_EQ(ConditionStatus(paused, "Ready"), "False");
  EXPECT_EQ(FreezerState(Options(), id), "FROZEN");
  EXPECT_FALSE((*envd)->Health(300ms).ok()) << "a frozen envd cannot answer";
  EXPECT_EQ(agent_->Dial(id, 49983, 1s).status().code(), StatusCode::kFailedPrecondition);
  auto paused_now = agent_->DialNow(id, 49983);
  if (paused_now) {
    EXPECT_EQ(paused_now->status().code(), StatusCode::kFailedPrecondition);
  }

  // Resume: the same processes run again.
  Patch("life", R"({"spec":{"paused":false}})");
  api::Object resumed = WaitPhase("life", "Running");
  EXPECT_EQ(ConditionStatus(resumed, "SandboxPaused"), "False");
  EXPECT_EQ(FreezerState(Options(), id), "THAWED");
  EXPECT_EQ(SandboxPids(Options(), id), pids);
  ASSERT_OK((*envd)->Health(2s));

  // Delete: the object goes once everything of the sandbox is gone.
  Delete("life");
  WaitGone("life");
  Leftovers left = LeftoversOf(Options(), id, pids.front(), created.metadata.uid);
  EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  EXPECT_EQ(agent_->Dial(id, 49983, 1s).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(agent_->Metrics(id).empty());
}

TEST_F(NodeTest, RestartPoliciesDecideWhatAnEndedCommandMeans) {
  StartAgent();
  // Never + exit 0: Succeeded, output kept, nothing running.
  api::Object once = Apply(SandboxYaml("once", "busybox", R"(["/bin/sh", "-c", "echo done"])",
                                       "{memory: 64Mi}", "Never"));
  api::Object succeeded = WaitPhase("once", "Succeeded");
  EXPECT_EQ(ConditionReason(succeeded, "Ready"), "Completed");
  WaitLog(*agent_, SandboxId(once), "done\n");
  EXPECT_TRUE(SandboxPids(Options(), SandboxId(once)).empty());

  // Always + exit 3: restarted with backoff, counted, reported.
  api::Object again = Apply(SandboxYaml(
      "again", "busybox", R"(["/bin/sh", "-c", "echo run; exit 3"])", "{memory: 64Mi}", "Always"));
  WaitFor(
      "again",
      [](const api::Object& o) {
        return o.status().is_object() && o.status().value("restartCount", 0) >= 2;
      },
      "two restarts");
  std::string ev = WaitEvent("again", "Error");
  EXPECT_TRUE(Contains(ev, "exited with code 3")) << ev;
  EXPECT_TRUE(Contains(ev, "restarting in")) << ev;
  std::string log = WaitLog(*agent_, SandboxId(again), "run\nrun\n");
  EXPECT_EQ(Phase(Get("again")), "Running") << "a restarting sandbox stays Running";

  // OnFailure + exit 0: Succeeded.
  Apply(SandboxYaml("onfail", "busybox", R"(["/bin/true"])", "{memory: 64Mi}", "OnFailure"));
  WaitPhase("onfail", "Succeeded");

  for (const char* name : {"once", "again", "onfail"}) Delete(name);
  for (const char* name : {"once", "again", "onfail"}) WaitGone(name);
  for (const api::Object& o : {once, again}) {
    Leftovers left = LeftoversOf(Options(), SandboxId(o), 0, o.metadata.uid);
    EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  }
}

TEST_F(NodeTest, TemplateRefWaitsForItsTemplate) {
  StartAgent();
  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: byref, namespace: default}
spec:
  templateRef: {name: later}
)");
  api::Object pending = WaitFor(
      "byref",
      [](const api::Object& o) { return ConditionReason(o, "Ready") == "TemplateNotFound"; },
      "TemplateNotFound");
  EXPECT_EQ(Phase(pending), "Pending") << "a missing template may still come";
  std::string ev = WaitEvent("byref", "TemplateNotFound");
  EXPECT_TRUE(Contains(ev, "\"later\"")) << ev;

  auto doc = api::ParseYaml(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxTemplate
metadata: {name: later, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: busybox, resources: {limits: {memory: 64Mi}}}]
)");
  ASSERT_TRUE(doc.ok());
  auto tmpl = api::ObjectFromJson(*doc);
  ASSERT_TRUE(tmpl.ok());
  ASSERT_TRUE(store_->store().Create(*tmpl).ok());
  WaitPhase("byref", "Running");
  Delete("byref");
  WaitGone("byref");
}

// A template that names no resources still runs limited: the node's defaults (2 CPUs,
// 512Mi, 2048 pids) in the sandbox's own cgroup, whichever cgroup version the host has, and its
// directory is a subvolume limited to the default ephemeral-storage.
TEST_F(NodeTest, ATemplateWithoutResourcesGetsTheDefaultLimits) {
  StartAgent();
  Apply(SandboxYaml("plain", "busybox", R"(["sleep", "3600"])"));
  api::Object running = WaitPhase("plain", "Running");
  const std::string id = SandboxId(running);
  const DefaultResources defaults;
  auto read = [](const std::string& path) {
    std::ifstream f(path);
    std::string v;
    std::getline(f, v);
    return v;
  };
  auto hierarchies = os::CgroupHierarchies::Detect();
  ASSERT_TRUE(hierarchies.ok()) << hierarchies.status();
  bool memory = false, pids = false, cpu = false;
  for (const std::string& dir : hierarchies->DirsFor(Options().cgroup_parent + "/" + id)) {
    if (std::string v = read(dir + "/memory.limit_in_bytes"); !v.empty()) {  // v1
      EXPECT_EQ(v, std::to_string(defaults.memory_bytes));
      memory = true;
    }
    if (std::string v = read(dir + "/memory.max"); !v.empty()) {  // v2
      EXPECT_EQ(v, std::to_string(defaults.memory_bytes));
      memory = true;
    }
    if (std::string v = read(dir + "/pids.max"); !v.empty()) {
      EXPECT_EQ(v, std::to_string(defaults.pids));
      pids = true;
    }
    if (std::string v = read(dir + "/cpu.cfs_quota_us"); !v.empty()) {  // v1, 100 ms period
      EXPECT_EQ(v, std::to_string(defaults.cpu_millicores * 100));
      cpu = true;
    }
    if (std::string v = read(dir + "/cpu.max"); !v.empty()) {  // v2
      EXPECT_EQ(v, fmt::format("{} 100000", defaults.cpu_millicores * 100));
      cpu = true;
    }
  }
  EXPECT_TRUE(memory && pids && cpu) << "memory " << memory << " pids " << pids << " cpu " << cpu;
  EXPECT_TRUE(os::IsSubvolume(SandboxPaths::For(Options().root, id).dir))
      << "the sandbox's files are not under an ephemeral-storage limit";
  Delete("plain");
  WaitGone("plain");
}

// The init channel lives in the sandbox's directory, under its ephemeral-storage limit. A sandbox
// whose files fill that limit still takes an /init (by request, envd/README.md) and can still be
// reset for its pool, with the previous body gone from the channel.
TEST_F(NodeTest, ASandboxThatFilledItsDiskStillTakesAnInitAndAReset) {
  StartAgent();
  Apply(SandboxYaml("full", "busybox", R"(["sleep", "3600"])", "{ephemeral-storage: 8Mi}"));
  api::Object ready = WaitFor(
      "full", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; }, "Ready");
  const std::string id = SandboxId(ready);
  const SandboxPaths paths = SandboxPaths::For(Options().root, id);
  const uid_t root = Options().user_namespace ? Options().userns_host_id : 0;
  ASSERT_TRUE(envd::WriteInitChannel(paths.init_dir, R"({"envVars":{"BEFORE":"1"}})", root).ok());
  {
    // As the sandbox's own writes would: the same subvolume, the same limit.
    std::ofstream fill(paths.writable + "/upper/fill", std::ios::binary);
    const std::string mib(1 << 20, 'x');
    for (int i = 0; i < 32 && fill.write(mib.data(), mib.size()) && fill.flush(); ++i) {
    }
  }
  ASSERT_FALSE(envd::WriteInitChannel(paths.init_dir, R"({"envVars":{"PROBE":"1"}})", root).ok())
      << "the sandbox's disk did not fill: nothing to show here";

  Status init = agent_->DeliverInit(id, R"({"accessToken":"","envVars":{"AFTER_FULL":"yes"}})", 5s);
  ASSERT_TRUE(init.ok()) << init;
  auto envd = agent_->Envd(id);
  ASSERT_TRUE(envd.ok()) << envd.status();
  net::ClientRequest get;
  get.target = "/envs";
  get.timeout = 5s;
  auto envs = (*envd)->Do(get);
  ASSERT_TRUE(envs.ok()) << envs.status();
  EXPECT_EQ(envs->status, 200) << envs->body;
  EXPECT_NE(envs->body.find("AFTER_FULL"), std::string::npos) << envs->body;

  Status reset = agent_->Reset(id, 30s);
  EXPECT_TRUE(reset.ok()) << reset;
  EXPECT_FALSE(std::filesystem::exists(paths.init_dir + "/" + envd::kInitChannelBody))
      << "the previous user's body is still in the channel";
  Delete("full");
  WaitGone("full");
}

TEST_F(NodeTest, PoolStockIsReadyWithAFullCpuWeight) {
  // Stock starts at a tenth of the weight (sandbox_plan.h, kPoolStockCpuWeight) and must have
  // the full one by the time it is Ready: a claim hands it to a user as it is.
  StartAgent();
  // The set itself (no controller runs here: the test makes its member), so that the store
  // keeps a member that names it as its owner.
  api::Object set = Apply(
      "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxSet\n"
      "metadata: {name: pool, namespace: default}\n"
      "spec:\n  replicas: 0\n  template:\n    spec:\n      containers:\n"
      "      - {name: main, image: busybox}\n");
  ASSERT_FALSE(set.metadata.uid.empty());
  std::string yaml = SandboxYaml("stock", "busybox", R"(["sleep", "3600"])");
  const std::string plain_meta = "metadata: {name: stock, namespace: default}";
  ASSERT_NE(yaml.find(plain_meta), std::string::npos);
  yaml.replace(yaml.find(plain_meta), plain_meta.size(),
               fmt::format("metadata: {{name: stock, namespace: default, ownerReferences: "
                           "[{{apiVersion: agents.kruise.io/v1alpha1, kind: SandboxSet, name: "
                           "pool, uid: {}, controller: true}}]}}",
                           set.metadata.uid));
  Apply(yaml);
  api::Object ready = WaitFor(
      "stock", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; }, "Ready");
  const std::string id = SandboxId(ready);
  auto hierarchies = os::CgroupHierarchies::Detect();
  ASSERT_TRUE(hierarchies.ok()) << hierarchies.status();
  bool seen = false;
  for (const std::string& dir : hierarchies->DirsFor(Options().cgroup_parent + "/" + id)) {
    std::ifstream shares(dir + "/cpu.shares");  // v1
    std::ifstream weight(dir + "/cpu.weight");  // v2, where the cpu controller is enabled
    std::string v;
    if (shares && std::getline(shares, v)) {
      EXPECT_EQ(v, "1024");
      seen = true;
    } else if (weight && std::getline(weight, v)) {
      EXPECT_EQ(v, "100");
      seen = true;
    }
  }
  if (!seen && hierarchies->version == os::CgroupVersion::kV1) {
    ADD_FAILURE() << "no cpu.shares for sandbox " << id;
  }
  Delete("stock");
  WaitGone("stock");
}

}  // namespace
}  // namespace warren::node::testing
