// In-place updates of real sandboxes (node/inplace_update.cc): an image change keeps the
// sandbox (id, object, volumes) and restarts its processes on the new image between its
// preUpgrade and postUpgrade hooks; a failing hook stops the update and says why; cpu/memory
// change without a restart; a change that does not qualify makes the sandbox again and says
// so; `warren restart` restarts every process on the same files.

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "api/kinds.h"
#include "node_fixture.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool Contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// The boot line every run of the template command appends to the kept volume: which image it
// runs on (a file only the second image has) and that it started.
constexpr const char* kCommand =
    R"(["/bin/sh", "-c", "echo started-$(cat /etc/image-version 2>/dev/null || echo v1) >> /data/boots; echo scratch > /root/scratch; exec sleep 3600"])";

std::string Container(const std::string& image, const std::string& command = kCommand,
                      const std::string& memory = "256Mi") {
  return fmt::format(
      R"({{"name":"main","image":"{}","command":{},"resources":{{"limits":{{"cpu":"500m","memory":"{}"}}}},"volumeMounts":[{{"name":"data","mountPath":"/data"}}]}})",
      image, command, memory);
}

std::string TemplatePatch(const std::string& container) {
  return fmt::format(R"({{"spec":{{"template":{{"spec":{{"containers":[{}]}}}}}}}})", container);
}

class InPlaceUpdateTest : public NodeTest {
 protected:
  // An image "inplace-v2": base plus /etc/image-version = v2, captured from a sandbox.
  void MakeSecondImage() {
    (void)agent_->images().Remove("inplace-v2");
    Apply(SandboxYaml("maker", "base",
                      R"(["/bin/sh", "-c", "echo v2 > /etc/image-version; exec sleep 3600"])"));
    api::Object maker = WaitPhase("maker", "Running");
    const std::string id = SandboxId(maker);
    const std::string marker =
        agent_->options().root + "/sandboxes/" + id + "/rootfs/upper/etc/image-version";
    for (int i = 0; i < 200 && !std::filesystem::exists(marker); ++i)
      std::this_thread::sleep_for(20ms);
    auto image = agent_->CaptureFilesystem(id, "inplace-v2", 30s);
    ASSERT_TRUE(image.ok()) << image.status();
    Delete("maker");
    WaitGone("maker");
  }
  void TearDown() override {
    if (agent_) (void)agent_->images().Remove("inplace-v2");
    NodeTest::TearDown();
  }

  api::Object ApplyUpdatable(const std::string& pre_hook, const std::string& post_hook) {
    return Apply(fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: upd, namespace: default}}
spec:
  lifecycle:
    preUpgrade: {{exec: {{command: {}}}, timeoutSeconds: 10}}
    postUpgrade: {{exec: {{command: {}}}, timeoutSeconds: 10}}
  template:
    spec:
      restartPolicy: Never
      volumes: [{{name: data, emptyDir: {{}}}}]
      containers: [{}]
)",
                             pre_hook, post_hook, Container("base")));
  }

  // ApplyUpdatable with hooks that do nothing, once Ready: its sandbox id.
  // The sandbox's processes once they stop changing: its template command's `$(cat …)` and its
  // postStart hook come and go just after Ready.
  std::vector<int> SettledPids(const std::string& id) {
    std::vector<int> last = SandboxPids(Options(), id);
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(50ms);
      std::vector<int> now = SandboxPids(Options(), id);
      if (now == last) return now;
      last = std::move(now);
    }
    return last;
  }

  std::string ReadyUpdatable() {
    const std::string id = SandboxId(ApplyUpdatable(R"(["true"])", R"(["true"])"));
    WaitFor(
        "upd", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; }, "Ready");
    return id;
  }

  std::string VolumeFile(const std::string& id, const std::string& name) {
    return ReadHostFile(agent_->options().root + "/sandboxes/" + id + "/volumes/data/" + name);
  }
  std::string UpperFile(const std::string& id, const std::string& name) {
    return agent_->options().root + "/sandboxes/" + id + "/rootfs/upper/" + name;
  }
  std::string Revision(const api::Object& obj) {
    return obj.status().value("updateRevision", std::string());
  }
};

TEST_F(InPlaceUpdateTest, AnImageChangeKeepsTheSandboxAndRestartsItBetweenItsHooks) {
  StartAgent();
  MakeSecondImage();
  api::Object created = ApplyUpdatable(
      R"(["/bin/sh", "-c", "echo pre-$(cat /etc/image-version 2>/dev/null || echo v1) >> /data/hooks"])",
      R"(["/bin/sh", "-c", "echo post-$(cat /etc/image-version 2>/dev/null || echo v1) >> /data/hooks"])");
  const std::string id = SandboxId(created);
  api::Object running = WaitFor(
      "upd", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; }, "Ready");
  const std::string v1_revision = Revision(running);
  ASSERT_EQ(v1_revision.size(), 8u) << running.status().dump();
  const std::vector<int> v1_pids = SettledPids(id);
  ASSERT_FALSE(v1_pids.empty());
  for (int i = 0; i < 200 && !std::filesystem::exists(UpperFile(id, "root/scratch")); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(std::filesystem::exists(UpperFile(id, "root/scratch")));

  Patch("upd", TemplatePatch(Container("inplace-v2")));
  api::Object updated = WaitFor(
      "upd",
      [](const api::Object& o) { return ConditionReason(o, "InplaceUpdate") == "Succeeded"; },
      "InplaceUpdate Succeeded");
  EXPECT_EQ(updated.metadata.uid, created.metadata.uid);
  EXPECT_EQ(SandboxId(updated), id) << "the same sandbox";
  EXPECT_EQ(Phase(updated), "Running");
  EXPECT_EQ(ConditionStatus(updated, "Ready"), "True");
  EXPECT_NE(Revision(updated), v1_revision);
  EXPECT_FALSE(updated.status().contains("failedUpdateRevision"));
  // Processes restarted on the new image, hooks around them, in order; the volume kept.
  EXPECT_NE(SandboxPids(Options(), id), v1_pids);
  EXPECT_EQ(VolumeFile(id, "hooks"), "pre-v1\npost-v2\n");
  for (int i = 0; i < 100 && !Contains(VolumeFile(id, "boots"), "started-v2"); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(VolumeFile(id, "boots"), "started-v1\nstarted-v2\n");
  // The writable layer went with the old image (persistentContents does not name filesystem);
  // the new run wrote its own.
  EXPECT_EQ(ReadHostFile(UpperFile(id, "root/scratch")), "scratch\n");
  EXPECT_FALSE(std::filesystem::exists(UpperFile(id, "etc/image-version")))
      << "the maker's file came with the image, not the writable layer";
  std::string event = WaitEvent("upd", "SuccessfulUpdateInPlace");
  EXPECT_TRUE(Contains(event, "image base → inplace-v2")) << event;
  // The lease moved to the new image: the old one is not pinned twice, the new one is.
  int leases_of_sandbox = 0;
  for (const auto& lease : agent_->images().ListLeases()) {
    if (Contains(lease.id, created.metadata.uid)) {
      ++leases_of_sandbox;
      EXPECT_EQ(lease.image, "inplace-v2:latest");
    }
  }
  EXPECT_EQ(leases_of_sandbox, 1);

  // A failing preUpgrade hook: no update, the old processes keep running, and it says why.
  const std::vector<int> v2_pids = SettledPids(id);
  Patch(
      "upd",
      R"({"spec":{"lifecycle":{"preUpgrade":{"exec":{"command":["/bin/sh","-c","echo not now >&2; exit 3"]}}}}})");
  Patch("upd", TemplatePatch(Container("base")));
  api::Object failed = WaitFor(
      "upd", [](const api::Object& o) { return ConditionReason(o, "InplaceUpdate") == "Failed"; },
      "InplaceUpdate Failed");
  const std::string message = failed.status()["conditions"].dump();
  EXPECT_TRUE(Contains(message, "preUpgrade hook failed")) << message;
  EXPECT_TRUE(Contains(message, "not now")) << message;
  EXPECT_EQ(Revision(failed), Revision(updated)) << "it still runs the image it ran";
  EXPECT_NE(failed.status().value("failedUpdateRevision", ""), "");
  EXPECT_EQ(ConditionStatus(failed, "Ready"), "True");
  EXPECT_EQ(SandboxPids(Options(), id), v2_pids);
  WaitEvent("upd", "FailedUpdateInPlace");
  Delete("upd");
  WaitGone("upd");
  Leftovers left = LeftoversOf(Options(), id, 0, created.metadata.uid);
  EXPECT_TRUE(left.items.empty()) << ::testing::PrintToString(left.items);
}

TEST_F(InPlaceUpdateTest, MemoryChangesLiveAndOtherChangesRecreateSayingSo) {
  StartAgent();
  const std::string id = ReadyUpdatable();
  const std::vector<int> pids = SettledPids(id);

  // cpu/memory: the same processes, a new limit.
  Patch("upd", TemplatePatch(Container("base", kCommand, "512Mi")));
  WaitFor(
      "upd",
      [](const api::Object& o) { return ConditionReason(o, "InplaceUpdate") == "Succeeded"; },
      "resize");
  EXPECT_EQ(SandboxPids(Options(), id), pids);
  auto deadline = std::chrono::steady_clock::now() + 10s;
  uint64_t limit = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    auto samples = agent_->Metrics(id);
    if (!samples.empty()) limit = samples.back().memory_limit_bytes;
    if (limit == (512u << 20)) break;
    std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(limit, 512u << 20);

  // A new command does not qualify: made again, and the condition and an Event say why.
  Patch("upd", TemplatePatch(Container(
                   "base", R"(["/bin/sh", "-c", "echo second >> /data/boots; exec sleep 3600"])",
                   "512Mi")));
  api::Object recreated = WaitFor(
      "upd",
      [](const api::Object& o) { return ConditionReason(o, "InplaceUpdate") == "Recreated"; },
      "Recreated");
  EXPECT_EQ(SandboxId(recreated), id);
  EXPECT_EQ(ConditionStatus(recreated, "Ready"), "True");
  const std::string conditions = recreated.status()["conditions"].dump();
  EXPECT_TRUE(Contains(conditions, "spec.containers[0].command changed")) << conditions;
  std::string event = WaitEvent("upd", "SuccessfulUpdateRecreate");
  EXPECT_TRUE(Contains(event, "does not qualify")) << event;
  for (int i = 0; i < 100 && VolumeFile(id, "boots").empty(); ++i)
    std::this_thread::sleep_for(20ms);
  EXPECT_EQ(VolumeFile(id, "boots"), "second\n") << "made again: its emptyDir is new";
  Delete("upd");
  WaitGone("upd");
}

TEST_F(InPlaceUpdateTest, RestartAnnotationRestartsEveryProcessOnTheSameFiles) {
  StartAgent();
  const std::string id = ReadyUpdatable();
  const std::vector<int> pids = SettledPids(id);
  for (int i = 0; i < 200 && !std::filesystem::exists(UpperFile(id, "root/scratch")); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  std::ofstream(UpperFile(id, "root/kept")) << "kept";
  Patch("upd", R"({"metadata":{"annotations":{"warren.dev/restart-requested-at":"one"}}})");
  api::Object restarted = WaitFor(
      "upd", [](const api::Object& o) { return o.status().value("restartedFor", "") == "one"; },
      "restartedFor");
  EXPECT_EQ(ConditionStatus(restarted, "Ready"), "True");
  EXPECT_NE(SandboxPids(Options(), id), pids);
  EXPECT_EQ(ReadHostFile(UpperFile(id, "root/kept")), "kept") << "restart keeps the files";
  for (int i = 0; i < 100 && VolumeFile(id, "boots") != "started-v1\nstarted-v1\n"; ++i) {
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_EQ(VolumeFile(id, "boots"), "started-v1\nstarted-v1\n");
  // The same value again asks for nothing.
  const std::vector<int> after = SettledPids(id);
  Patch("upd", R"({"metadata":{"labels":{"touched":"yes"}}})");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(SandboxPids(Options(), id), after);
  Delete("upd");
  WaitGone("upd");
}

}  // namespace
}  // namespace warren::node::testing
