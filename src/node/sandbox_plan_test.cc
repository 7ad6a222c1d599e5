#include "node/sandbox_plan.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "api/quantity.h"
#include "os/cgroup.h"

namespace warren::node {
namespace {

PlanInput Input() {
  PlanInput in;
  in.sandbox_id = "iabc0000000000000000";
  api::Container c;
  c.name = "main";
  c.image = "base";
  in.pod.spec.containers.push_back(c);
  in.image.env = {"PATH=/usr/bin:/bin", "LANG=C.UTF-8"};
  in.image.cmd = {"/bin/bash"};
  in.image.working_dir = "/";
  in.layers = {"/layers/a"};
  in.paths = SandboxPaths::For("/var/lib/warren/node", in.sandbox_id);
  in.envd_path = "/usr/local/bin/warren-envd";
  in.node_secret = "s3cret";
  in.capacity = NodeCapacity{2000, int64_t{8} << 30};
  return in;
}

bool Has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

api::Quantity Q(const char* text) { return *api::Quantity::Parse(text); }

TEST(SandboxPlan, ANodeWithANetworkLinksEverySandboxOutUnderItsPolicyWithTheNodesResolvers) {
  PlanInput in = Input();
  PlanOutcome without = PlanSandbox(in);
  ASSERT_TRUE(without.plan);
  EXPECT_FALSE(without.plan->spec.egress) << "no node network: loopback only";

  in.resolv_conf = "/var/lib/warren/node/resolv.conf";
  in.egress_policy = *sbnet::MakeEgressPolicy(false, {"1.1.1.1"}, {});
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  const runtime::SandboxSpec& spec = out.plan->spec;
  EXPECT_TRUE(spec.egress);
  EXPECT_FALSE(spec.egress_policy.allow_internet);
  ASSERT_EQ(spec.egress_policy.allow_out.size(), 1u);
  auto resolv =
      std::find_if(spec.mounts.begin(), spec.mounts.end(),
                   [](const runtime::BindMount& m) { return m.target == "/etc/resolv.conf"; });
  ASSERT_NE(resolv, spec.mounts.end());
  EXPECT_EQ(resolv->source, in.resolv_conf);
  EXPECT_TRUE(resolv->read_only) << "one file, shared by every sandbox of the node";
}

TEST(SandboxPlan, PoolStockStartsAtATenthOfTheCpuWeight) {
  PlanInput in = Input();
  PlanOutcome cold = PlanSandbox(in);
  ASSERT_TRUE(cold.plan);
  EXPECT_EQ(cold.plan->spec.cpu_weight, 0) << "a sandbox someone waits for: the default";
  in.pool_stock = true;
  PlanOutcome stock = PlanSandbox(in);
  ASSERT_TRUE(stock.plan);
  EXPECT_EQ(stock.plan->spec.cpu_weight, kPoolStockCpuWeight);
  EXPECT_EQ(kPoolStockCpuWeight * 10, os::kDefaultCpuWeight);
}

TEST(SandboxPlan, Pid1IsEnvdAndTheCommandRunsUnderIt) {
  PlanInput in = Input();
  in.pod.spec.containers[0].command = {"python3", "-m", "http.server"};
  in.pod.spec.containers[0].args = {"8080"};
  in.pod.spec.containers[0].env = {{"FOO", "bar"}, {"LANG", "en_US.UTF-8"}};
  in.pod.spec.containers[0].working_dir = "/work";
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  const runtime::SandboxSpec& spec = out.plan->spec;
  EXPECT_EQ(spec.command.front(), kEnvdInSandbox);
  EXPECT_TRUE(Has(spec.command, "--exit-with-command"));
  EXPECT_TRUE(Has(spec.command, "--inherit-env"));
  std::vector<std::string> tail(spec.command.end() - 5, spec.command.end());
  EXPECT_EQ(tail, (std::vector<std::string>{"--", "python3", "-m", "http.server", "8080"}));
  EXPECT_TRUE(Has(spec.env, "FOO=bar"));
  EXPECT_TRUE(Has(spec.env, "LANG=en_US.UTF-8")) << "the container's env wins over the image's";
  EXPECT_TRUE(Has(spec.env, "WARREN_ENVD_NODE_SECRET=s3cret"));
  EXPECT_TRUE(Has(spec.command, "/work"));
  ASSERT_GE(spec.mounts.size(), 2u);
  EXPECT_EQ(spec.mounts[0].source, in.envd_path);
  EXPECT_TRUE(spec.mounts[0].read_only);
  EXPECT_EQ(spec.resources.memory_bytes, in.defaults.memory_bytes);
  EXPECT_EQ(spec.resources.pids, in.defaults.pids);
  EXPECT_EQ(out.plan->restart_policy, RestartPolicy::kAlways);
}

TEST(SandboxPlan, ABareImageCmdIsNotRun) {
  PlanOutcome out = PlanSandbox(Input());  // image Cmd /bin/bash, no entrypoint
  ASSERT_TRUE(out.plan);
  EXPECT_TRUE(out.plan->command.empty());
  EXPECT_FALSE(Has(out.plan->spec.command, "--exit-with-command"));

  PlanInput in = Input();
  in.image.entrypoint = {"/entry.sh"};
  out = PlanSandbox(in);
  EXPECT_EQ(out.plan->command, (std::vector<std::string>{"/entry.sh", "/bin/bash"}));
  in.pod.spec.containers[0].args = {"x"};
  out = PlanSandbox(in);
  EXPECT_EQ(out.plan->command, (std::vector<std::string>{"/entry.sh", "x"}));
}

TEST(SandboxPlan, LimitsThenRequestsThenDefaults) {
  PlanInput in = Input();
  in.pod.spec.containers[0].resources.requests = {{"cpu", Q("250m")}, {"memory", Q("128Mi")}};
  in.pod.spec.containers[0].resources.limits = {{"memory", Q("1Gi")}};
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  EXPECT_EQ(out.plan->spec.resources.cpu_millicores, 250);
  EXPECT_EQ(out.plan->spec.resources.memory_bytes, int64_t{1} << 30);
}

TEST(SandboxPlan, ImpossibleResourcesAreInvalidResources) {
  struct Case {
    std::map<std::string, api::Quantity> limits, requests;
    std::string part;
  };
  std::vector<Case> cases = {
      {{{"memory", Q("1Ki")}}, {}, "memory 1Ki is below"},
      {{{"cpu", Q("1m")}}, {}, "cpu 1m is below"},
      {{}, {{"cpu", Q("3")}}, "cpu request 3 exceeds this node's 2 CPUs"},
      {{}, {{"memory", Q("9Gi")}}, "memory request 9Gi exceeds"},
      {{{"nvidia.com/gpu", Q("1")}}, {}, "\"nvidia.com/gpu\" is not available"},
  };
  for (const auto& c : cases) {
    PlanInput in = Input();
    in.pod.spec.containers[0].resources.limits = c.limits;
    in.pod.spec.containers[0].resources.requests = c.requests;
    PlanOutcome out = PlanSandbox(in);
    ASSERT_FALSE(out.plan) << c.part;
    EXPECT_EQ(out.failure.reason, "InvalidResources");
    EXPECT_NE(out.failure.message.find(c.part), std::string::npos) << out.failure.message;
  }
}

TEST(SandboxPlan, ANativeEnvdFollowsTheInitChannelReadOnly) {
  PlanInput in = Input();
  in.runtime_classes = {"native", "gvisor"};
  PlanOutcome native = PlanSandbox(in);
  ASSERT_TRUE(native.plan) << native.failure.message;
  EXPECT_TRUE(native.plan->init_channel);
  const std::vector<std::string>& cmd = native.plan->spec.command;
  auto flag = std::find(cmd.begin(), cmd.end(), "--init-dir");
  ASSERT_NE(flag, cmd.end());
  ASSERT_NE(flag + 1, cmd.end());
  EXPECT_EQ(*(flag + 1), kInitDirInSandbox);
  auto mount =
      std::find_if(native.plan->spec.mounts.begin(), native.plan->spec.mounts.end(),
                   [](const runtime::BindMount& m) { return m.target == kInitDirInSandbox; });
  ASSERT_NE(mount, native.plan->spec.mounts.end());
  EXPECT_EQ(mount->source, in.paths.init_dir);
  EXPECT_TRUE(mount->read_only) << "the sandbox must not write its own /init";
  // A gVisor sandbox would not see the node's writes to a host file: POST /init instead.
  in.pod.spec.runtime_class_name = "gvisor";
  PlanOutcome gvisor = PlanSandbox(in);
  ASSERT_TRUE(gvisor.plan) << gvisor.failure.message;
  EXPECT_FALSE(gvisor.plan->init_channel);
  EXPECT_FALSE(Has(gvisor.plan->spec.command, "--init-dir"));
  for (const runtime::BindMount& m : gvisor.plan->spec.mounts)
    EXPECT_NE(m.target, kInitDirInSandbox);
}

TEST(SandboxPlan, RuntimeClassAndRestartPolicyAreChecked) {
  PlanInput in = Input();
  in.pod.spec.runtime_class_name = "gvisor";
  EXPECT_EQ(PlanSandbox(in).failure.reason, "RuntimeClassNotAvailable");
  EXPECT_NE(PlanSandbox(in).failure.message.find("it runs \"native\""), std::string::npos);
  // A class the node has is taken, and an empty one is the node's first.
  in.runtime_classes = {"native", "gvisor"};
  ASSERT_TRUE(PlanSandbox(in).plan);
  EXPECT_EQ(PlanSandbox(in).plan->spec.runtime_class, "gvisor");
  in.pod.spec.runtime_class_name = "";
  EXPECT_EQ(PlanSandbox(in).plan->spec.runtime_class, "native");
  in.pod.spec.runtime_class_name = "kata";
  EXPECT_NE(PlanSandbox(in).failure.message.find("\"native\", \"gvisor\""), std::string::npos);
  in = Input();
  in.restart_policy = "Sometimes";
  EXPECT_EQ(PlanSandbox(in).failure.reason, "InvalidTemplate");
  in.restart_policy = "OnFailure";
  EXPECT_EQ(PlanSandbox(in).plan->restart_policy, RestartPolicy::kOnFailure);
}

TEST(SandboxPlan, VolumesBecomeBindMounts) {
  PlanInput in = Input();
  api::Volume scratch;
  scratch.name = "scratch";
  scratch.empty_dir.emplace();
  api::Volume host;
  host.name = "host";
  host.host_path = api::HostPathVolumeSource{"/srv/data", "DirectoryOrCreate"};
  in.pod.spec.volumes = {scratch, host};
  in.pod.spec.containers[0].volume_mounts = {{"scratch", "/scratch", "", false},
                                             {"host", "/data", "sub", true}};
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  const auto& mounts = out.plan->spec.mounts;
  ASSERT_EQ(mounts.size(), 5u);  // envd, log dir, scratch, host, the init channel
  EXPECT_EQ(mounts[2].source, in.paths.volumes + "/scratch");
  EXPECT_FALSE(mounts[2].read_only);
  // The subPath is left to the runtime, which resolves it beneath the volume at every Start
  // without following symlinks; the plan never joins it into a host path.
  EXPECT_EQ(mounts[3].source, "/srv/data");
  EXPECT_EQ(mounts[3].sub_path, "sub");
  EXPECT_TRUE(mounts[3].read_only);
  for (const HostPath& p : out.plan->host_paths) {
    EXPECT_FALSE(p.path.ends_with("/sub")) << p.path << " is prepared by the node";
  }

  in.pod.spec.containers[0].volume_mounts = {{"host", "/data", "../etc", false}};
  EXPECT_EQ(PlanSandbox(in).failure.reason, "InvalidVolume");
}

TEST(SandboxPlan, PersistentVolumeClaimsMountTheAttachedVolumeDirectory) {
  PlanInput in = Input();
  api::Volume work;
  work.name = "work";
  work.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{"team-data", false};
  api::Volume ro;
  ro.name = "ro";
  ro.persistent_volume_claim = api::PersistentVolumeClaimVolumeSource{"shared", true};
  in.pod.spec.volumes = {work, ro};
  in.pod.spec.containers[0].volume_mounts = {{"work", "/work", "", false},
                                             {"ro", "/shared", "", false}};
  in.persistent_volumes = {{"team-data", "/v/uid-1"}, {"shared", "/v/uid-2"}};
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  const auto& mounts = out.plan->spec.mounts;
  ASSERT_EQ(mounts.size(), 5u);  // envd, log dir, the two volumes, the init channel
  EXPECT_EQ(mounts[2].source, "/v/uid-1");
  EXPECT_EQ(mounts[2].target, "/work");
  EXPECT_FALSE(mounts[2].read_only);
  EXPECT_EQ(mounts[3].source, "/v/uid-2");
  EXPECT_TRUE(mounts[3].read_only) << "the claim's readOnly holds whatever the mount says";
  // The agent prepares nothing for a volume: it exists (attached) before the plan is made.
  EXPECT_TRUE(out.plan->host_paths.size() == 1u) << "only the log directory";

  in.persistent_volumes.erase("shared");
  PlanOutcome missing = PlanSandbox(in);
  EXPECT_EQ(missing.failure.reason, "InvalidVolume");
  EXPECT_NE(missing.failure.message.find("\"shared\" is not attached"), std::string::npos)
      << missing.failure.message;
}

TEST(SandboxPlan, EphemeralStorageIsTheLimitElseTheRequestElseTheDefault) {
  PlanInput in = Input();
  in.defaults.ephemeral_storage_bytes = int64_t{10} << 30;
  in.capacity.ephemeral_storage_bytes = int64_t{50} << 30;
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << out.failure.message;
  EXPECT_EQ(out.plan->ephemeral_storage_bytes, int64_t{10} << 30) << "the node's default";

  auto& resources = in.pod.spec.containers[0].resources;
  resources.requests["ephemeral-storage"] = Q("2Gi");
  EXPECT_EQ(PlanSandbox(in).plan->ephemeral_storage_bytes, int64_t{2} << 30);
  resources.limits["ephemeral-storage"] = Q("64Mi");
  EXPECT_EQ(PlanSandbox(in).plan->ephemeral_storage_bytes, int64_t{64} << 20);
}

TEST(SandboxPlan, EphemeralStorageOutOfRangeIsInvalidResources) {
  PlanInput in = Input();
  in.capacity.ephemeral_storage_bytes = int64_t{50} << 30;
  auto& resources = in.pod.spec.containers[0].resources;
  resources.limits["ephemeral-storage"] = Q("100Ki");
  PlanOutcome out = PlanSandbox(in);
  EXPECT_EQ(out.failure.reason, "InvalidResources");
  EXPECT_NE(out.failure.message.find("below the minimum of 1Mi"), std::string::npos)
      << out.failure.message;

  resources.limits.clear();
  resources.requests["ephemeral-storage"] = Q("60Gi");
  out = PlanSandbox(in);
  EXPECT_EQ(out.failure.reason, "InvalidResources");
  EXPECT_NE(out.failure.message.find("exceeds this node's sandbox storage (50Gi)"),
            std::string::npos)
      << out.failure.message;
}

TEST(SandboxPlan, UnenforcedEphemeralStorageRefusesTemplatesThatNameIt) {
  PlanInput in = Input();
  in.ephemeral_storage_unenforced = "no btrfs";
  PlanOutcome out = PlanSandbox(in);
  ASSERT_TRUE(out.plan) << "a template without ephemeral-storage still runs";
  EXPECT_EQ(out.plan->ephemeral_storage_bytes, 0);

  in.pod.spec.containers[0].resources.limits["ephemeral-storage"] = Q("1Gi");
  out = PlanSandbox(in);
  EXPECT_FALSE(out.plan);
  EXPECT_EQ(out.failure.reason, "EphemeralStorageNotEnforced");
  EXPECT_NE(out.failure.message.find("no btrfs"), std::string::npos) << out.failure.message;
}

}  // namespace
}  // namespace warren::node
