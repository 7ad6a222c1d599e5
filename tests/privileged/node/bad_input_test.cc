// Bad input ends as a Failed sandbox with a condition reason and an Event, never a crash and
// never a half-made sandbox; the memory limit's kills are reported.

#include <thread>

#include "node_fixture.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

struct BadCase {
  std::string name;
  std::string yaml;
  std::string reason;
  std::string message_part;
};

TEST_F(NodeTest, BadInputEndsFailedWithAReasonAndAnEvent) {
  StartAgent();
  const std::vector<BadCase> cases = {
      {"noimage", SandboxYaml("noimage", "no-such-image", R"(["sleep", "60"])", "{memory: 64Mi}"),
       "ImageNotFound", "\"no-such-image\""},
      {"tinymem", SandboxYaml("tinymem", "busybox", R"(["sleep", "60"])", "{memory: 1Ki}"),
       "InvalidResources", "memory 1Ki is below the minimum"},
      {"tinycpu", SandboxYaml("tinycpu", "busybox", R"(["sleep", "60"])", "{cpu: 1m}"),
       "InvalidResources", "cpu 1m is below the minimum"},
      {"hugecpu", SandboxYaml("hugecpu", "busybox", R"(["sleep", "60"])", "{cpu: \"4096\"}"),
       "InvalidResources", "exceeds this node's"},
      {"gpu", SandboxYaml("gpu", "busybox", R"(["sleep", "60"])", "{nvidia.com/gpu: \"1\"}"),
       "InvalidResources", "\"nvidia.com/gpu\" is not available"},
      {"nocmd", SandboxYaml("nocmd", "busybox", R"(["/bin/no-such-command"])", "{memory: 64Mi}"),
       "CommandNotFound", "/bin/no-such-command"},
      {"gvisor", SandboxYaml("gvisor", "busybox", R"(["sleep", "60"])", "{memory: 64Mi}", "Never"),
       "RuntimeClassNotAvailable", "\"gvisor\""},
      {"badpolicy", SandboxYaml("badpolicy", "busybox", R"(["sleep", "60"])", "", "Sometimes"),
       "InvalidTemplate", "restartPolicy \"Sometimes\""},
  };
  std::vector<api::Object> created;
  for (BadCase c : cases) {
    if (c.name == "gvisor") {
      c.yaml.replace(c.yaml.find("restartPolicy"), 0, "runtimeClassName: gvisor\n      ");
    }
    created.push_back(Apply(c.yaml));
  }
  for (size_t i = 0; i < cases.size(); ++i) {
    const BadCase& c = cases[i];
    SCOPED_TRACE(c.name);
    api::Object failed = WaitPhase(c.name, "Failed");
    EXPECT_EQ(ConditionReason(failed, "Ready"), c.reason);
    const std::string message = failed.status().value("message", "");
    EXPECT_TRUE(Contains(message, c.message_part)) << message;
    std::string ev = WaitEvent(c.name, c.reason);
    EXPECT_TRUE(Contains(ev, c.message_part)) << ev;
    // Nothing half-made: no process, cgroup, mount or runtime state (the sandbox's own
    // directory may keep the command's log until the object goes).
    Leftovers left = LeftoversOf(Options(), SandboxId(created[i]), 0);
    for (const auto& item : left.items) {
      EXPECT_TRUE(item.rfind("sandbox dir ", 0) == 0) << item;
    }
    EXPECT_TRUE(SandboxPids(Options(), SandboxId(created[i])).empty());
  }
  for (const auto& c : cases) Delete(c.name);
  for (size_t i = 0; i < cases.size(); ++i) {
    WaitGone(cases[i].name);
    Leftovers left = LeftoversOf(Options(), SandboxId(created[i]), 0, created[i].metadata.uid);
    EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  }
  EXPECT_TRUE(agent_->List().empty());
}

TEST_F(NodeTest, OutOfMemoryIsReported) {
  StartAgent();
  // The template command itself is killed: the sandbox ends OOMKilled.
  api::Object hog =
      Apply(SandboxYaml("hog", "busybox", R"(["tail", "/dev/zero"])", "{memory: 32Mi}", "Never"));
  api::Object failed = WaitPhase("hog", "Failed");
  EXPECT_EQ(ConditionReason(failed, "Ready"), "OOMKilled");
  std::string ev = WaitEvent("hog", "OOMKilled");
  EXPECT_TRUE(Contains(ev, "limit 32Mi")) << ev;

  // A process inside is killed but the sandbox lives on: an Event and a condition.
  api::Object survivor = Apply(SandboxYaml(
      "survivor", "busybox",
      R"(["/bin/sh", "-c", "sleep 1; tail /dev/zero; echo still here; exec sleep 3600"])",
      "{memory: 32Mi}", "Never"));
  WaitFor(
      "survivor", [](const api::Object& o) { return ConditionStatus(o, "OOMKilled") == "True"; },
      "the OOMKilled condition");
  ev = WaitEvent("survivor", "OOMKilled");
  EXPECT_TRUE(Contains(ev, "keeps running")) << ev;
  EXPECT_EQ(Phase(Get("survivor")), "Running");

  Delete("hog");
  Delete("survivor");
  WaitGone("hog");
  WaitGone("survivor");
  for (const api::Object& o : {hog, survivor}) {
    Leftovers left = LeftoversOf(Options(), SandboxId(o), 0, o.metadata.uid);
    EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
  }
}

TEST_F(NodeTest, SandboxIdsAreOneSandboxEach) {
  StartAgent();
  const std::string fixed = "ifixed000000000000000";
  auto with_id = [&](const std::string& name) {
    std::string y = SandboxYaml(name, "busybox", R"(["sleep", "3600"])", "{memory: 64Mi}");
    y.replace(y.find("namespace: default}"), 19,
              "namespace: default, labels: {agents.kruise.io/sandbox-id: " + fixed + "}}");
    return y;
  };
  Apply(with_id("first"));
  WaitPhase("first", "Running");
  Apply(with_id("second"));
  api::Object second = WaitPhase("second", "Failed");
  EXPECT_EQ(ConditionReason(second, "Ready"), "SandboxIdConflict");
  // The first one is untouched.
  EXPECT_EQ(Phase(Get("first")), "Running");
  ASSERT_TRUE(agent_->Envd(fixed).ok());
  ASSERT_OK((*agent_->Envd(fixed))->Health(2s));
  Delete("second");
  WaitGone("second");
  ASSERT_OK((*agent_->Envd(fixed))->Health(2s));
  Delete("first");
  WaitGone("first");
}

}  // namespace
}  // namespace warren::node::testing
