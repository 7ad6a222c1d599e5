// Scheduled prewarm against a real `warren server`: an AdvancedCronJob on a one-minute schedule
// sizes a SandboxSet when the minute turns, with the server's own clock.

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <thread>

#include "api/json.h"
#include "process.h"
#include "server_sandboxes.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;
using warren::testing::CommandResult;
using warren::testing::ServerProcess;

constexpr char kManifest[] = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: cron-pool, namespace: default}
spec:
  replicas: 0
  template:
    spec:
      containers:
      - name: main
        image: busybox
        command: ["/bin/sh", "-c", "exec sleep 3600"]
        resources: {limits: {memory: 64Mi}}
---
apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata: {name: busy-hours, namespace: default}
spec:
  schedule: "* * * * *"
  timeZone: Europe/Berlin
  template:
    sandboxSetReplicasTemplate: {name: cron-pool, replicas: 2}
)";

api::Json Get(ServerProcess& s, const std::string& path) { return GetJson(s, path); }

TEST(AdvancedCronJobTest, AOneMinuteScheduleSizesThePoolWhenTheMinuteTurns) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  setenv("WARREN_ENVD_PATH", WARREN_ENVD_BIN, 1);
  setenv("WARREN_NODE_AGENT", "on", 1);
  ServerProcess s;
  CommandResult apply = s.Cli({"apply", "-f", "-"}, kManifest);
  ASSERT_EQ(apply.exit_code, 0) << apply.err;
  const std::string set =
      "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxsets/cron-pool";
  const std::string cron =
      "/apis/apps.kruise.io/v1alpha1/namespaces/default/advancedcronjobs/busy-hours";
  EXPECT_EQ(Get(s, set)["spec"].value("replicas", -1), 0) << "nothing fires before the minute";
  auto deadline = std::chrono::steady_clock::now() + 75s;
  api::Json pool;
  while (std::chrono::steady_clock::now() < deadline) {
    pool = Get(s, set);
    if (pool.is_object() && pool["spec"].value("replicas", 0) == 2) break;
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(pool["spec"].value("replicas", 0), 2) << api::DumpJson(pool);
  api::Json job = Get(s, cron);
  const std::string last = job["status"].value("lastScheduleTime", "");
  ASSERT_FALSE(last.empty()) << api::DumpJson(job);
  EXPECT_TRUE(last.ends_with(":00Z")) << last << " is not on a minute";
  EXPECT_EQ(job["status"].value("type", ""), "SandboxSetReplicas");
  CommandResult get = s.Cli({"get", "acj"});
  EXPECT_TRUE(Contains(get.out, "busy-hours")) << get.out;
  EXPECT_TRUE(Contains(get.out, "* * * * *")) << get.out;
  ASSERT_EQ(s.Cli({"delete", "acj", "busy-hours"}).exit_code, 0);
  ASSERT_EQ(s.Cli({"delete", "sbs", "cron-pool"}).exit_code, 0);
  // The members go with their set; stopping the server before its node agent has torn them
  // down would leave them running (to be adopted by a server that never comes).
  const std::string sandboxes = "/apis/agents.kruise.io/v1alpha1/namespaces/default/sandboxes";
  api::Json left;
  for (auto until = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(100ms)) {
    left = Get(s, sandboxes);
    if (left.is_object() && left["items"].is_array() && left["items"].empty()) break;
  }
  EXPECT_TRUE(left.is_object() && left["items"].is_array() && left["items"].empty())
      << "the pool's members were not torn down: " << api::DumpJson(left);
}

}  // namespace
}  // namespace warren::node::testing
