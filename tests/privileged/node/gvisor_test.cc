// A Sandbox whose template names runtimeClassName gvisor runs under runsc: envd answers through
// the stdio channel, commands run through it (exit code, output, files), a restarted agent
// adopts it, and deleting it leaves nothing of runsc behind.
#include <dirent.h>
#include <fmt/format.h>
#include <poll.h>
#include <unistd.h>

#include <thread>

#include "api/json.h"
#include "api/kinds.h"
#include "node/probe_runner.h"
#include "node_fixture.h"
#include "os/mount.h"
#include "runtime/gvisor/gvisor_runtime.h"
#include "runtime/runtime_router.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    }
    closedir(d);
  }
  return out;
}

class GvisorNodeTest : public NodeTest {
 protected:
  void SetUp() override {
    NodeTest::SetUp();
    if (IsSkipped()) return;
    if (access("/usr/bin/runsc", X_OK) != 0) GTEST_SKIP() << "needs runsc";
  }
  void TearDown() override {
    const std::string parent = Options().cgroup_parent + "-gvisor";
    DestroyLeftGvisorSandboxes();
    NodeTest::TearDown();
    // The agent's teardown removes the parent runsc made in every hierarchy.
    auto mounts = os::ReadMountInfo();
    if (!mounts.ok()) return;
    for (const os::MountEntry& m : *mounts) {
      if (m.fs_type != "cgroup" && m.fs_type != "cgroup2") continue;
      EXPECT_NE(access((m.mount_point + "/" + parent).c_str(), F_OK), 0)
          << "cgroup left behind: " << m.mount_point << "/" << parent;
    }
  }
  // A test that failed midway leaves its gVisor sandbox running (runsc's sandbox, gofer and our
  // shim, the rootfs overlay, runsc's cgroups): NodeTest's own teardown only knows native
  // sandboxes. Destroyed here through a gvisor runtime on the same state dir, as a failure.
  void DestroyLeftGvisorSandboxes() {
    if (IsSkipped()) return;
    StopAgent();
    const NodeAgentOptions o = GvisorOptions();
    auto rt = runtime::gvisor::GvisorRuntime::Create({.state_dir = o.root + "/gvisor",
                                                      .cgroup_parent = o.cgroup_parent + "-gvisor",
                                                      .runsc_path = o.runsc_path,
                                                      .init_path = o.gvisor_init_path});
    if (!rt.ok()) return;
    auto report = (*rt)->Adopt();
    if (!report.ok()) return;
    for (const auto& info : report->adopted) {
      ADD_FAILURE() << "gVisor sandbox left running: " << info.id;
      if (Status s = (*rt)->Destroy(info.id); !s.ok()) ADD_FAILURE() << s;
    }
    for (const auto& orphan : report->orphans) (void)(*rt)->RemoveOrphan(orphan);
    rt->reset();
    runtime::gvisor::GvisorRuntime::RemoveEmptyCgroups(o.cgroup_parent + "-gvisor");
    rmdir((o.root + "/gvisor/.runsc").c_str());
    rmdir((o.root + "/gvisor").c_str());
  }
  NodeAgentOptions GvisorOptions() const {
    NodeAgentOptions o = Options();
    o.gvisor_init_path = WARREN_GVISOR_INIT_BIN;
    return o;
  }
  void StartGvisorAgent() {
    agent_ = std::make_unique<NodeAgent>(store_->store(), GvisorOptions());
    ASSERT_TRUE(agent_->Start().ok());
  }
  ProbeOutcome Exec(const std::string& id, const std::string& script) {
    auto envd = agent_->Envd(id);
    if (!envd.ok()) return ProbeOutcome{false, envd.status().ToString(), std::nullopt};
    ProbeAction action;
    action.type = ProbeAction::Type::kExec;
    action.command = {"/bin/sh", "-c", script};
    action.timeout = 10s;
    runtime::Runtime* rt = &agent_->runtime();
    return RunProbe(action,
                    ProbeTarget{*envd, [rt, id](uint16_t port, std::chrono::milliseconds t) {
                                  return rt->Dial(id, port, t);
                                }});
  }
};

TEST_F(GvisorNodeTest, ASandboxOfClassGvisorRunsCommandsThroughEnvd) {
  StartGvisorAgent();
  auto* router = dynamic_cast<runtime::RuntimeRouter*>(&agent_->runtime());
  ASSERT_NE(router, nullptr);
  ASSERT_EQ(router->Classes(), (std::vector<std::string>{"native", "gvisor"}));
  // The Node object says which classes it runs.
  auto node = store_->store().Get(api::NodeKind(), "", "test-node");
  ASSERT_TRUE(node.ok()) << node.status();
  EXPECT_NE(api::DumpJson(node->body).find("\"gvisor\""), std::string::npos)
      << api::DumpJson(node->body);

  Apply(SandboxYaml("gv", "busybox",
                    R"(["/bin/sh", "-c", "echo template says hi; exec sleep 3600"])",
                    "{memory: 256Mi}", "Never", "") +
        "      runtimeClassName: gvisor\n");
  api::Object running = WaitPhase("gv", "Running", 120s);
  const std::string id = SandboxId(running);
  ASSERT_FALSE(id.empty());
  auto cls = router->ClassOf(id);
  ASSERT_TRUE(cls.ok()) << cls.status();
  EXPECT_EQ(*cls, "gvisor");

  auto fd = agent_->Dial(id, 49983, 5s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  std::string health = RawHttp(fd->get(), "GET /health HTTP/1.0\r\nHost: envd\r\n\r\n");
  EXPECT_NE(health.find("HTTP/1.1 204"), std::string::npos) << health;

  // The template command's output reaches its log through envd in the sandbox's log volume.
  auto envd = agent_->Envd(id);
  ASSERT_TRUE(envd.ok()) << envd.status();
  std::string logs;
  for (int i = 0; i < 100 && logs.find("template says hi") == std::string::npos; ++i) {
    auto got = (*envd)->Logs(5s);
    if (got.ok()) logs = *got;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_NE(logs.find("template says hi"), std::string::npos) << logs;

  ProbeOutcome out = Exec(id, "echo from-gvisor; uname -r >&2; exit 3");
  ASSERT_TRUE(out.exit_code.has_value()) << out.output;
  EXPECT_EQ(*out.exit_code, 3);
  EXPECT_NE(out.output.find("from-gvisor"), std::string::npos) << out.output;
  out = Exec(id, "echo kept > /root/file && cat /root/file");
  EXPECT_EQ(out.exit_code.value_or(-1), 0) << out.output;
  EXPECT_NE(out.output.find("kept"), std::string::npos) << out.output;
  // gVisor's own kernel answers, not the host's.
  out = Exec(id, "dmesg | head -1");
  EXPECT_NE(out.output.find("gVisor"), std::string::npos) << out.output;

  // A restarted agent finds it again, through the gvisor runtime's own records.
  StopAgent();
  StartGvisorAgent();
  router = dynamic_cast<runtime::RuntimeRouter*>(&agent_->runtime());
  ASSERT_NE(router, nullptr);
  EXPECT_EQ(router->ClassOf(id).value_or(""), "gvisor");
  EXPECT_EQ(Phase(Get("gv")), "Running");
  out = Exec(id, "cat /root/file");
  EXPECT_NE(out.output.find("kept"), std::string::npos) << out.output;

  Delete("gv");
  WaitGone("gv", 120s);
  const std::string state = GvisorOptions().root + "/gvisor";
  EXPECT_TRUE(Entries(state).empty()) << "gvisor state left: " << Entries(state).front();
  EXPECT_TRUE(Entries(state + "/.runsc").empty()) << "runsc state left";
}

// A pause of a gVisor sandbox writes its processes and memory to disk (runsc checkpoint of a
// sandbox running warren-envd-gvisor) and frees them; unpausing restores them where they were,
// also after the agent restarted in between.
TEST_F(GvisorNodeTest, PauseHibernatesAndUnpauseGoesOnWhereItWas) {
  StartGvisorAgent();
  // The counter is renamed into place: `echo > count` truncates first, and a read landing
  // between the truncation and the write saw 0 (the test flaked so).
  Apply(
      SandboxYaml(
          "hib", "busybox",
          R"(["/bin/sh", "-c", "i=0; while true; do i=$((i+1)); echo $i > /root/c; mv /root/c /root/count; sleep 0.05; done"])",
          "{memory: 256Mi}", "Never", "") +
      "      runtimeClassName: gvisor\n");
  const std::string id = SandboxId(WaitPhase("hib", "Running", 120s));
  ASSERT_FALSE(id.empty());
  auto count = [&]() -> long {
    ProbeOutcome out = Exec(id, "cat /root/count");
    return out.exit_code.value_or(-1) == 0 ? std::atol(out.output.c_str()) : -1;
  };
  std::this_thread::sleep_for(1s);
  ASSERT_EQ(Exec(id, "echo kept > /root/file").exit_code.value_or(-1), 0);
  const long before = count();
  ASSERT_GT(before, 3);

  Patch("hib", R"({"spec": {"paused": true}})");
  api::Object paused = WaitPhase("hib", "Paused", 60s);
  EXPECT_EQ(ConditionReason(paused, "SandboxPaused"), "HibernatePauseSucceed")
      << api::DumpJson(paused.body);
  auto info = agent_->runtime().Inspect(id);
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->state, runtime::SandboxState::kPaused);
  EXPECT_EQ(info->pid, 0) << "no process holds a hibernated sandbox";
  const std::string image = GvisorOptions().root + "/gvisor/" + id + "/checkpoint";
  EXPECT_EQ(access(image.c_str(), F_OK), 0) << "no checkpoint image at " << image;

  // A restarted agent finds it hibernated, and keeps it so.
  StopAgent();
  StartGvisorAgent();
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Phase(Get("hib")), "Paused");
  EXPECT_EQ(agent_->runtime().Inspect(id)->pid, 0);

  Patch("hib", R"({"spec": {"paused": false}})");
  WaitPhase("hib", "Running", 60s);
  const long after = count();
  EXPECT_GE(after, before) << "the counter started over: its process was not restored";
  EXPECT_LT(after, before + 60) << "it ran while hibernated";
  std::this_thread::sleep_for(500ms);
  EXPECT_GT(count(), after) << "and it runs on";
  ProbeOutcome file = Exec(id, "cat /root/file");
  EXPECT_NE(file.output.find("kept"), std::string::npos) << file.output;
  EXPECT_NE(access(image.c_str(), F_OK), 0) << "the spent image is removed";

  Delete("hib");
  WaitGone("hib", 120s);
}

TEST_F(GvisorNodeTest, WithoutRunscTheClassIsNotOfferedAndSaysSo) {
  NodeAgentOptions o = GvisorOptions();
  o.runsc_path = "/nonexistent/runsc";
  agent_ = std::make_unique<NodeAgent>(store_->store(), o);
  ASSERT_TRUE(agent_->Start().ok());
  Apply(SandboxYaml("nogv", "busybox", R"(["sleep", "60"])", "", "Never", "") +
        "      runtimeClassName: gvisor\n");
  api::Object failed = WaitPhase("nogv", "Failed");
  EXPECT_EQ(ConditionReason(failed, "Ready"), "RuntimeClassNotAvailable")
      << api::DumpJson(failed.body);
  Delete("nogv");
  WaitGone("nogv");
}

}  // namespace
}  // namespace warren::node::testing
