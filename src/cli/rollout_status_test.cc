#include "cli/rollout_status.h"

#include <gtest/gtest.h>

namespace warren::cli {
namespace {

using api::Json;

TEST(RolloutStatus, PrintsOkactlsLine) {
  Json updating = Json::parse(R"({"metadata": {"name": "my-pool", "generation": 2},
    "spec": {"replicas": 3},
    "status": {"observedGeneration": 2, "replicas": 3, "availableReplicas": 1,
               "updatedReplicas": 1, "updatedAvailableReplicas": 1}})");
  EXPECT_EQ(SandboxSetRollout(updating).Line(), "my-pool  Updating  1/3 updated  1/3 available");

  Json ready = Json::parse(R"({"metadata": {"name": "p", "generation": 2}, "spec": {"replicas": 2},
    "status": {"observedGeneration": 2, "availableReplicas": 2, "updatedReplicas": 2,
               "updatedAvailableReplicas": 2}})");
  EXPECT_EQ(SandboxSetRollout(ready).Line(), "p  Ready  2/2 updated  2/2 available");

  // A spec the controller has not seen yet is not done, whatever the counts say.
  ready["metadata"]["generation"] = 3;
  EXPECT_FALSE(SandboxSetRollout(ready).done);
  // No status at all (just created): nothing counted.
  EXPECT_EQ(
      SandboxSetRollout(Json::parse(R"({"metadata": {"name": "n"}, "spec": {"replicas": 1}})"))
          .Line(),
      "n  Updating  0/1 updated  0/1 available");
}

TEST(RolloutStatus, NamesTheMembersThatAreNotReady) {
  Json items = Json::parse(R"([
    {"metadata": {"name": "ok"}, "status": {"phase": "Running",
      "conditions": [{"type": "Ready", "status": "True"}]}},
    {"metadata": {"name": "bad"}, "status": {"phase": "Failed",
      "message": "image \"nope\" not found"}},
    {"metadata": {"name": "slow"}, "status": {"phase": "Pending",
      "conditions": [{"type": "Ready", "status": "False", "reason": "Starting"}]}},
    {"metadata": {"name": "new"}}])");
  EXPECT_EQ(
      UnreadyMembers(items, 10),
      (std::vector<std::string>{"sandbox bad: Failed: image \"nope\" not found",
                                "sandbox slow: Pending: Starting", "sandbox new: not started"}));
  EXPECT_EQ(UnreadyMembers(items, 1).size(), 1u);
  EXPECT_TRUE(UnreadyMembers(Json("x"), 3).empty());
}

}  // namespace
}  // namespace warren::cli

namespace warren::cli {
namespace {

TEST(RolloutStatus, PrintsOkactlsUpdateOpsLineAndWhyItStopped) {
  Json updating = Json::parse(R"({"metadata": {"name": "suo-zk7h7"},
    "status": {"phase": "Updating", "replicas": 2, "updatedReplicas": 0, "updatingReplicas": 1}})");
  UpdateOpsStatus s = UpdateOpsRollout(updating);
  EXPECT_EQ(s.Line(), "suo-zk7h7  Updating   0/2 updated  1 updating  0 failed");
  EXPECT_FALSE(s.failed_phase());
  EXPECT_EQ(UpdateOpsRollout(Json::parse(R"({"metadata": {"name": "n"}})")).Line(),
            "n  Pending    0/0 updated  0 updating  0 failed");
  Json failed = Json::parse(R"({"metadata": {"name": "u"},
    "status": {"phase": "Failed", "replicas": 3, "updatedReplicas": 1, "failedReplicas": 1,
               "conditions": [{"type": "Progressing", "status": "False",
                               "reason": "SandboxUpdateFailed", "message": "sandbox \"b\" failed"}]}})");
  s = UpdateOpsRollout(failed);
  EXPECT_TRUE(s.failed_phase());
  EXPECT_EQ(s.reason, "SandboxUpdateFailed");
  EXPECT_EQ(s.message, "sandbox \"b\" failed");
  EXPECT_EQ(s.Line(), "u  Failed     1/3 updated  0 updating  1 failed");
}

}  // namespace
}  // namespace warren::cli
