#include "cli/rollout_edits.h"

#include <gtest/gtest.h>

namespace warren::cli {
namespace {

using api::Json;

Json J(const char* text) { return api::ParseJson(text).value(); }

TEST(RolloutEdits, ImageArgsNameTheirContainerOrNot) {
  auto args = ParseImageArgs({"main=reg:5000/app:2", "base:1"});
  ASSERT_TRUE(args.ok()) << args.status();
  EXPECT_EQ((*args)[0].container, "main");
  EXPECT_EQ((*args)[0].image, "reg:5000/app:2");
  EXPECT_EQ((*args)[1].container, "");
  EXPECT_FALSE(ParseImageArgs({}).ok());
  EXPECT_FALSE(ParseImageArgs({"=img"}).ok());
  EXPECT_FALSE(ParseImageArgs({"main="}).ok());
}

TEST(RolloutEdits, SetImagePatchesTheInlineTemplateOnly) {
  Json sbs = J(R"({"metadata": {"name": "pool", "resourceVersion": "7"},
    "spec": {"template": {"spec": {"containers": [
      {"name": "main", "image": "a:1", "command": ["sleep"]}, {"name": "side", "image": "s:1"}]}}}})");
  auto patch = SetImagePatch(sbs, *ParseImageArgs({"side=s:2"}));
  ASSERT_TRUE(patch.ok()) << patch.status();
  EXPECT_EQ((*patch)["spec"]["template"]["spec"]["containers"],
            J(R"([{"name": "main", "image": "a:1", "command": ["sleep"]},
                  {"name": "side", "image": "s:2"}])"));
  EXPECT_EQ((*patch)["metadata"]["resourceVersion"], "7");
  auto bare = SetImagePatch(sbs, *ParseImageArgs({"a:2"}));
  ASSERT_FALSE(bare.ok());
  EXPECT_NE(bare.status().message().find("main, side"), std::string::npos);
  auto unknown = SetImagePatch(sbs, *ParseImageArgs({"web=w:1"}));
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no container \"web\""), std::string::npos);

  Json by_ref = J(R"({"metadata": {"name": "pool"}, "spec": {"templateRef": {"name": "py"}}})");
  auto refused = SetImagePatch(by_ref, *ParseImageArgs({"main=a:2"}));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("uses templateRef \"py\""), std::string::npos)
      << refused.status();
}

TEST(RolloutEdits, UpdateOpsCarriesTheSelectorPatchAndSteering) {
  UpdateOpsFlags flags{.selector = "app=a,tier in (web,api),!canary,env!=prod",
                       .max_unavailable = "30%",
                       .partition = "2",
                       .paused = true};
  auto ops = UpdateOpsForImages(flags, *ParseImageArgs({"main=img:2"}));
  ASSERT_TRUE(ops.ok()) << ops.status();
  EXPECT_EQ((*ops)["kind"], "SandboxUpdateOps");
  EXPECT_EQ((*ops)["metadata"]["generateName"], "suo-");
  const Json& spec = (*ops)["spec"];
  EXPECT_EQ(spec["selector"]["matchLabels"], J(R"({"app": "a"})"));
  EXPECT_EQ(spec["selector"]["matchExpressions"].size(), 3u);
  EXPECT_EQ(spec["patch"], J(R"({"spec": {"containers": [{"name": "main", "image": "img:2"}]}})"));
  EXPECT_EQ(spec["updateStrategy"]["maxUnavailable"], "30%");
  EXPECT_EQ(spec["partition"], 2);
  EXPECT_EQ(spec["paused"], true);

  EXPECT_FALSE(UpdateOpsForImages({.selector = ""}, *ParseImageArgs({"main=i:2"})).ok());
  EXPECT_FALSE(UpdateOpsForImages({.selector = "a>1"}, *ParseImageArgs({"main=i:2"})).ok());
  EXPECT_FALSE(UpdateOpsForImages({.selector = "a=b"}, *ParseImageArgs({"i:2"})).ok());
  EXPECT_FALSE(
      UpdateOpsForImages({.selector = "a=b", .partition = "-1"}, *ParseImageArgs({"m=i:2"})).ok());
  EXPECT_FALSE(
      UpdateOpsForImages({.selector = "a=b", .max_unavailable = "x%"}, *ParseImageArgs({"m=i:2"}))
          .ok());
}

}  // namespace
}  // namespace warren::cli
