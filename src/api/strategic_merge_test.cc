#include "api/strategic_merge.h"

#include <gtest/gtest.h>

namespace warren::api {
namespace {

Json J(const char* text) { return ParseJson(text).value(); }

constexpr const char* kTemplate = R"({
  "metadata": {"labels": {"app": "a", "tier": "web"}},
  "spec": {
    "restartPolicy": "Never",
    "containers": [
      {"name": "main", "image": "img:1", "command": ["sleep", "1"],
       "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
      {"name": "side", "image": "side:1"}
    ],
    "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cache", "emptyDir": {}}]
  }})";

TEST(StrategicMerge, ContainersMergeByNameAndKeepTheOthers) {
  Json t = J(kTemplate);
  ASSERT_TRUE(ApplyPodTemplateStrategicMerge(
                  t, J(R"({"spec":{"containers":[{"name":"main","image":"img:2"}]}})"))
                  .ok());
  EXPECT_EQ(t["spec"]["containers"].size(), 2u);
  EXPECT_EQ(t["spec"]["containers"][0]["image"], "img:2");
  // The rest of the merged item is kept.
  EXPECT_EQ(t["spec"]["containers"][0]["command"], J(R"(["sleep","1"])"));
  EXPECT_EQ(t["spec"]["containers"][1]["image"], "side:1");
  EXPECT_EQ(t["spec"]["restartPolicy"], "Never");
}

TEST(StrategicMerge, UnknownNameIsAppendedAndDeleteDirectiveRemoves) {
  Json t = J(kTemplate);
  ASSERT_TRUE(ApplyPodTemplateStrategicMerge(
                  t, J(R"({"spec":{"containers":[{"name":"side","$patch":"delete"},
                                                 {"name":"new","image":"n:1"}],
                                  "volumes":[{"name":"logs","emptyDir":{"medium":"Memory"}}]}})"))
                  .ok());
  ASSERT_EQ(t["spec"]["containers"].size(), 2u);
  EXPECT_EQ(t["spec"]["containers"][0]["name"], "main");
  EXPECT_EQ(t["spec"]["containers"][1]["name"], "new");
  ASSERT_EQ(t["spec"]["volumes"].size(), 3u);
  EXPECT_EQ(t["spec"]["volumes"][2]["emptyDir"]["medium"], "Memory");
}

TEST(StrategicMerge, OtherListsAreReplacedAndNullDeletes) {
  Json t = J(kTemplate);
  ASSERT_TRUE(ApplyPodTemplateStrategicMerge(t, J(R"({"metadata":{"labels":{"tier":null,"v":"2"}},
                           "spec":{"containers":[{"name":"main","command":null,
                                                  "env":[{"name":"C","value":"3"}]}]}})"))
                  .ok());
  EXPECT_EQ(t["metadata"]["labels"], J(R"({"app":"a","v":"2"})"));
  EXPECT_FALSE(t["spec"]["containers"][0].contains("command"));
  // env is not a keyed list here: the patch's list replaces the target's.
  EXPECT_EQ(t["spec"]["containers"][0]["env"], J(R"([{"name":"C","value":"3"}])"));
}

TEST(StrategicMerge, ApplyingTwiceIsTheSameAsOnce) {
  const Json patch = J(R"({"spec":{"containers":[{"name":"main","image":"img:2"},
                                                 {"name":"new","image":"n:1"}]}})");
  Json once = J(kTemplate);
  ASSERT_TRUE(ApplyPodTemplateStrategicMerge(once, patch).ok());
  Json twice = once;
  ASSERT_TRUE(ApplyPodTemplateStrategicMerge(twice, patch).ok());
  EXPECT_EQ(once, twice);
}

TEST(StrategicMerge, BadPatchesAreRefusedAndLeaveTheTemplateAlone) {
  const Json original = J(kTemplate);
  Json t = original;
  auto s = ApplyPodTemplateStrategicMerge(t, J(R"([1])"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  s = ApplyPodTemplateStrategicMerge(
      t, J(R"({"metadata":{"labels":{"x":"y"}},"spec":{"containers":[{"image":"no-name"}]}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("spec.containers[0]"), std::string::npos) << s.message();
  s = ApplyPodTemplateStrategicMerge(
      t, J(R"({"spec":{"volumes":[{"name":"data","$patch":"replace"}]}})"));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t, original);
}

}  // namespace
}  // namespace warren::api
