// SandboxUpdateOps end to end: `warren server` with its node agent, ten real busybox sandboxes
// each with an emptyDir at /data (kept across the update) and a shared hostPath at /shared, and
// an ops that moves them to the `base` image. The hooks append to /data/hooks (in the sandbox)
// and to /shared/order (across sandboxes), so the test sees the order they ran in and how many
// sandboxes were between their preUpgrade and postUpgrade at once.
//
// Needs the node agent's half of the contract (controller/sandbox_update_ops_controller.h):
// updating a sandbox whose template changed, running the hooks, reporting updateRevision or
// failedUpdateRevision.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "api/json.h"
#include "base/small_file.h"
#include "base/strings.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

constexpr int kPool = 10;
constexpr char kOpsPath[] = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxupdateops/";

std::string Name(int i) { return fmt::format("sbx-{:02d}", i); }

class SandboxUpdateOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
    setenv("WARREN_NODE_AGENT", "on", 1);
    char dir[] = "/tmp/warren-suo-XXXXXX";
    ASSERT_NE(mkdtemp(dir), nullptr);
    shared_ = dir;
    chmod(dir, 0777);  // the sandboxes' root may be mapped to another host uid
    server_ = std::make_unique<ServerProcess>();
    gateway_ =
        "127.0.0.1:" + std::string(base::TrimSpace(
                           base::ReadSmallFile(server_->data_dir() + "/gateway.port").value()));
    std::string manifests;
    for (int i = 0; i < kPool; ++i) manifests += PoolMember(Name(i));
    CommandResult applied = server_->Cli({"apply", "-f", "-"}, manifests);
    ASSERT_EQ(applied.exit_code, 0) << applied.err;
    for (int i = 0; i < kPool; ++i) WaitPhase(*server_, Name(i), "Running");
  }
  void TearDown() override {
    if (server_ == nullptr) return;
    server_->Cli({"delete", "suo", "--all"});
    CommandResult boxes = server_->Cli({"delete", "sbx", "--all"});
    EXPECT_EQ(boxes.exit_code, 0) << boxes.err;
    for (int i = 0; i < kPool; ++i) WaitGone(*server_, Name(i));
    std::filesystem::remove_all(shared_);
  }

  // The command names the sandbox in /data/name by a rename: it runs again on the new image
  // while the postUpgrade hook may already be reading the file (a truncate-then-write let the
  // hook read it empty).
  std::string PoolMember(const std::string& name) const {
    return fmt::format(R"(---
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: {0}, namespace: default, labels: {{app: pool}}}}
spec:
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "echo {0} > /data/name.new; mv /data/name.new /data/name; exec sleep 3600"]
        resources: {{limits: {{memory: 64Mi}}}}
        volumeMounts: [{{name: data, mountPath: /data}}, {{name: shared, mountPath: /shared}}]
      volumes:
      - {{name: data, emptyDir: {{}}}}
      - {{name: shared, hostPath: {{path: {1}, type: Directory}}}}
)",
                       name, shared_);
  }

  // An ops moving app=pool to `base`, with hooks that log to /data/hooks and /shared/order.
  std::string Ops(const std::string& name, const std::string& extra,
                  const std::string& pre_extra = "") const {
    return fmt::format(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxUpdateOps
metadata: {{name: {}, namespace: default}}
spec:
  selector: {{matchLabels: {{app: pool}}}}
  patch: {{spec: {{containers: [{{name: main, image: base}}]}}}}
  lifecycle:
    preUpgrade:
      exec: {{command: ["/bin/sh", "-c", "{}echo pre >> /data/hooks; echo pre $(cat /data/name) >> /shared/order"]}}
    postUpgrade:
      exec: {{command: ["/bin/sh", "-c", "echo post >> /data/hooks; echo post $(cat /data/name) >> /shared/order"]}}
{})",
                       name, pre_extra, extra);
  }

  api::Json GetOps(const std::string& name) { return GetJson(*server_, kOpsPath + name); }
  std::string Phase(const std::string& name) {
    api::Json o = GetOps(name);
    return o.is_object() && o.contains("status") ? o["status"].value("phase", "") : "";
  }
  // Waits for the ops' phase, watching how many sandboxes are not Ready meanwhile.
  api::Json WaitOps(const std::string& name, const std::string& phase, int* max_unready) {
    auto deadline = std::chrono::steady_clock::now() + 5min;
    while (std::chrono::steady_clock::now() < deadline) {
      int unready = 0;
      for (int i = 0; i < kPool; ++i) {
        api::Json s = GetSandbox(*server_, Name(i));
        bool ready = false;
        if (s.is_object() && s.contains("status")) {
          for (const auto& c : s["status"].value("conditions", api::Json::array())) {
            ready |= c.value("type", "") == "Ready" && c.value("status", "") == "True";
          }
        }
        unready += !ready;
      }
      if (max_unready != nullptr) *max_unready = std::max(*max_unready, unready);
      if (Phase(name) == phase) return GetOps(name);
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << name << " never reached " << phase << ": " << api::DumpJson(GetOps(name));
    return GetOps(name);
  }
  // What `script` prints in sandbox `name`.
  std::string InSandbox(const std::string& name, const std::string& script) {
    CommandResult r =
        server_->Cli({"exec", name, "--sandbox-url", gateway_, "--", "/bin/sh", "-c", script});
    EXPECT_EQ(r.exit_code, 0) << name << ": " << r.err;
    return r.out;
  }
  std::string ImageOf(const std::string& name) {
    return InSandbox(name, "test -e /usr/bin/python3 && echo base || echo busybox");
  }
  std::vector<std::string> Order() {
    std::ifstream in(shared_ + "/order");
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
  }

  std::string shared_;
  std::unique_ptr<ServerProcess> server_;
  std::string gateway_;
};

TEST_F(SandboxUpdateOpsTest, APoolOfTenRespectsMaxUnavailablePauseAndPartitionWithHooksInOrder) {
  CommandResult created = server_->Cli(
      {"apply", "-f", "-"},
      Ops("up", "  paused: true\n  partition: 2\n  updateStrategy: {maxUnavailable: 3}\n"));
  ASSERT_EQ(created.exit_code, 0) << created.err;
  // Paused: selected and counted, none started.
  std::this_thread::sleep_for(2s);
  CommandResult status = server_->Cli({"status", "suo", "up"});
  EXPECT_EQ(status.out, "up  Pending    0/10 updated  0 updating  0 failed\n") << status.err;
  EXPECT_TRUE(Order().empty());

  ASSERT_EQ(
      server_
          ->Cli({"apply", "-f", "-"}, Ops("up",
                                          "  paused: false\n  partition: 2\n  updateStrategy: "
                                          "{maxUnavailable: 3}\n"))
          .exit_code,
      0);
  int max_unready = 0;
  api::Json done = WaitOps("up", "Completed", &max_unready);
  EXPECT_LE(max_unready, 3);
  EXPECT_EQ(done["status"].value("updatedReplicas", 0), 8);
  EXPECT_EQ(done["status"].value("replicas", 0), 10);
  for (int i = 0; i < kPool; ++i) {
    EXPECT_EQ(ImageOf(Name(i)), i < 8 ? "base\n" : "busybox\n") << Name(i);
  }
  // The emptyDir outlived the update: the old sandbox's preUpgrade line, then the new one's
  // postUpgrade line.
  EXPECT_EQ(InSandbox(Name(0), "cat /data/hooks"), "pre\npost\n");
  EXPECT_EQ(InSandbox(Name(9), "cat /data/hooks 2>/dev/null; true"), "");
  // Across the pool: every pre before its post, never more than 3 between them at once, and
  // sandboxes started in name order.
  std::vector<std::string> order = Order();
  EXPECT_EQ(order.size(), 16u);
  std::map<std::string, int> pre_at;
  std::vector<std::string> started;
  int in_flight = 0, max_in_flight = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    auto words = base::SplitNonEmpty(order[i], ' ');
    ASSERT_EQ(words.size(), 2u) << order[i];
    std::string who(words[1]);
    if (words[0] == "pre") {
      pre_at[who] = static_cast<int>(i);
      started.push_back(who);
      max_in_flight = std::max(max_in_flight, ++in_flight);
    } else {
      ASSERT_TRUE(pre_at.contains(who)) << "post before pre for " << who;
      --in_flight;
    }
  }
  EXPECT_LE(max_in_flight, 3);
  EXPECT_GE(max_in_flight, 2) << "the budget of 3 was never used";
  std::vector<std::string> by_name = started;
  std::sort(by_name.begin(), by_name.end());
  EXPECT_EQ(by_name.size(), 8u);
  // Each batch is started in name order; a later batch never holds an earlier name.
  for (size_t i = 3; i < started.size(); ++i) EXPECT_GT(started[i], started[i - 3]);

  // Lowering the partition goes on to the last two.
  ASSERT_EQ(server_
                ->Cli({"apply", "-f", "-"},
                      Ops("up", "  partition: 0\n  updateStrategy: {maxUnavailable: 3}\n"))
                .exit_code,
            0);
  for (int i = 0; i < 1200 && Order().size() < 20u; ++i) std::this_thread::sleep_for(100ms);
  ASSERT_EQ(Order().size(), 20u);
  WaitOps("up", "Completed", nullptr);
  EXPECT_EQ(ImageOf(Name(9)), "base\n");
  api::Json sbx = GetSandbox(*server_, Name(9));
  EXPECT_FALSE(sbx["spec"].contains("upgradePolicy")) << "cleared once updated";
  EXPECT_EQ(sbx["metadata"]["labels"].value("agents.kruise.io/update-ops", ""), "up");
}

TEST_F(SandboxUpdateOpsTest, AFailingHookStopsTheRolloutWithAReason) {
  ASSERT_EQ(server_
                ->Cli({"apply", "-f", "-"},
                      Ops("up", "",
                          "if [ $(cat /data/name) = sbx-02 ]; then echo no space >&2; "
                          "exit 3; fi; "))
                .exit_code,
            0);
  api::Json failed = WaitOps("up", "Failed", nullptr);
  std::this_thread::sleep_for(2s);  // nothing more is started
  EXPECT_EQ(failed["status"].value("failedReplicas", 0), 1);
  EXPECT_EQ(failed["status"].value("updatedReplicas", 0), 2);
  std::string message;
  for (const auto& c : failed["status"]["conditions"]) {
    if (c.value("type", "") == "Progressing") message = c.value("message", "");
  }
  EXPECT_TRUE(Contains(message, "sbx-02")) << message;
  EXPECT_TRUE(Contains(message, "exited with code 3")) << message;
  CommandResult status = server_->Cli({"status", "suo", "up"});
  EXPECT_EQ(status.exit_code, 1);
  EXPECT_TRUE(Contains(status.err, "SandboxUpdateFailed")) << status.err;
  EXPECT_EQ(ImageOf(Name(0)), "base\n");
  EXPECT_EQ(ImageOf(Name(1)), "base\n");
  EXPECT_EQ(ImageOf(Name(2)), "busybox\n");  // its hook failed before it was stopped
  for (int i = 3; i < kPool; ++i) {
    EXPECT_EQ(ImageOf(Name(i)), "busybox\n") << Name(i);
    api::Json s = GetSandbox(*server_, Name(i));
    EXPECT_FALSE(s["spec"].contains("upgradePolicy")) << Name(i) << " was never started";
  }
  api::Json s2 = GetSandbox(*server_, Name(2));
  EXPECT_EQ(s2["metadata"]["labels"].value("agents.kruise.io/upgrade-failed", ""), "true");
  for (const auto& line : Order()) EXPECT_FALSE(Contains(line, "sbx-03")) << line;
}

}  // namespace
}  // namespace warren::node::testing
