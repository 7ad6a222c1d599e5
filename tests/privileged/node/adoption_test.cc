// Restarting the agent: running sandboxes are adopted (same processes, still answering), a
// runtime sandbox without an object is destroyed, an object whose sandbox vanished fails with a
// clear reason.

#include <thread>

#include "image/image_store.h"
#include "node_fixture.h"
#include "runtime/native/native_runtime.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(NodeTest, RestartAdoptsWhatRunsAndCleansWhatShouldNot) {
  StartAgent();
  api::Object keep =
      Apply(SandboxYaml("keep", "busybox", R"(["sleep", "3600"])", "{memory: 64Mi}", "Always"));
  api::Object lost =
      Apply(SandboxYaml("lost", "busybox", R"(["sleep", "3600"])", "{memory: 64Mi}", "Always"));
  WaitPhase("keep", "Running");
  WaitPhase("lost", "Running");
  const std::string keep_id = SandboxId(keep);
  const std::vector<int> keep_pids = SandboxPids(Options(), keep_id);
  ASSERT_FALSE(keep_pids.empty());
  StopAgent();

  // While no agent runs: one sandbox vanishes (as after a host reboot), and a sandbox appears
  // that no object asked for.
  const std::string orphan_id = "iorphan0000000000000";
  int orphan_pid = 0;
  {
    runtime::native::NativeRuntimeOptions ro;
    ro.state_dir = Options().runtime_state_dir;
    ro.cgroup_parent = Options().cgroup_parent;
    auto rt = runtime::native::NativeRuntime::Create(ro);
    ASSERT_TRUE(rt.ok()) << rt.status();
    auto report = (*rt)->Adopt();
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->adopted.size(), 2u);
    ASSERT_OK((*rt)->Destroy(SandboxId(lost)));
    auto images = image::ImageStore::Open({.root = Options().image_root});
    ASSERT_TRUE(images.ok());
    auto busybox = (*images)->Resolve("busybox");
    ASSERT_TRUE(busybox.ok()) << busybox.status();
    runtime::SandboxSpec spec;
    spec.id = orphan_id;
    spec.layers = busybox->lower_dirs;
    spec.writable_dir = dir_->path() + "/orphan-rw";
    spec.command = {"/bin/sleep", "3600"};
    spec.resources.memory_bytes = 64 << 20;
    ASSERT_OK((*rt)->Create(spec));
    ASSERT_OK((*rt)->Start(orphan_id));
    auto pid = (*rt)->Pid(orphan_id);
    ASSERT_TRUE(pid.ok());
    orphan_pid = *pid;
  }

  StartAgent();
  // The orphan is gone as soon as the agent has started.
  Leftovers orphan = LeftoversOf(Options(), orphan_id, orphan_pid);
  EXPECT_TRUE(orphan.items.empty()) << ::testing::PrintToString(orphan.items);
  // The survivor is the same sandbox, still answering.
  api::Object kept = WaitPhase("keep", "Running");
  EXPECT_EQ(SandboxPids(Options(), keep_id), keep_pids);
  EXPECT_EQ(kept.status().value("restartCount", 0), 0);
  auto envd = agent_->Envd(keep_id);
  ASSERT_TRUE(envd.ok()) << envd.status();
  ASSERT_OK((*envd)->Health(2s));
  // The vanished one says so.
  api::Object failed = WaitPhase("lost", "Failed");
  EXPECT_EQ(ConditionReason(failed, "Ready"), "SandboxLost");
  WaitEvent("lost", "SandboxLost");

  Delete("keep");
  Delete("lost");
  WaitGone("keep");
  WaitGone("lost");
  Leftovers left = LeftoversOf(Options(), keep_id, keep_pids.front(), keep.metadata.uid);
  EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
}

}  // namespace
}  // namespace warren::node::testing

namespace warren::node::testing {
namespace {

TEST_F(NodeTest, DestroyOnStopLeavesNothingRunning) {
  NodeAgentOptions o = Options();
  o.destroy_on_stop = true;
  agent_ = std::make_unique<NodeAgent>(store_->store(), o);
  ASSERT_OK(agent_->Start());
  api::Object s =
      Apply(SandboxYaml("brief", "busybox", R"(["sleep", "3600"])", "{memory: 64Mi}", "Always"));
  WaitPhase("brief", "Running");
  const std::vector<int> pids = SandboxPids(Options(), SandboxId(s));
  ASSERT_FALSE(pids.empty());
  StopAgent();
  Leftovers left = LeftoversOf(Options(), SandboxId(s), pids.front(), s.metadata.uid);
  EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  // A later agent finds the object's sandbox gone and says so.
  StartAgent();
  EXPECT_EQ(ConditionReason(WaitPhase("brief", "Failed"), "Ready"), "SandboxLost");
  Delete("brief");
  WaitGone("brief");
}

}  // namespace
}  // namespace warren::node::testing
