#include "node/json_fields.h"

#include <gtest/gtest.h>

namespace warren::node {
namespace {

using api::Json;

TEST(EqualExceptKeys, IgnoredKeysMayDifferOrBeMissing) {
  Json a = {{"phase", "Running"}, {"observedGeneration", 3}};
  Json b = {{"phase", "Running"}, {"observedGeneration", 4}};
  Json c = {{"phase", "Running"}};
  EXPECT_TRUE(EqualExceptKeys(a, b, {"observedGeneration"}));
  EXPECT_TRUE(EqualExceptKeys(a, c, {"observedGeneration"}));
  EXPECT_TRUE(EqualExceptKeys(c, a, {"observedGeneration"}));
  EXPECT_FALSE(EqualExceptKeys(a, b, {}));
}

TEST(EqualExceptKeys, AnyOtherDifferenceCounts) {
  Json a = {{"image", "x"}, {"shutdownTime", "t1"}};
  EXPECT_FALSE(
      EqualExceptKeys(a, {{"image", "y"}, {"shutdownTime", "t1"}}, {"shutdownTime", "pauseTime"}));
  // A key only one side has, in either direction.
  EXPECT_FALSE(EqualExceptKeys(a, {{"image", "x"}, {"cpu", 1}}, {"shutdownTime"}));
  EXPECT_FALSE(EqualExceptKeys({{"image", "x"}, {"cpu", 1}}, a, {"shutdownTime"}));
  EXPECT_FALSE(EqualExceptKeys(a, {{"shutdownTime", "t1"}}, {"shutdownTime"}));
  // Nested differences count even under a key with an ignored name deeper down.
  EXPECT_FALSE(EqualExceptKeys({{"s", {{"shutdownTime", 1}}}}, {{"s", {{"shutdownTime", 2}}}},
                               {"shutdownTime"}));
}

TEST(EqualExceptKeys, NonObjectsAreComparedWhole) {
  EXPECT_TRUE(EqualExceptKeys(Json(), Json(), {"x"}));
  EXPECT_FALSE(EqualExceptKeys(Json::object(), Json(), {"x"}));
  EXPECT_FALSE(EqualExceptKeys(Json::array({1}), Json::array({2}), {"x"}));
}

}  // namespace
}  // namespace warren::node
