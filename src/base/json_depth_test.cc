#include "base/json_depth.h"

#include <gtest/gtest.h>

#include <string>

namespace warren::base {
namespace {

std::string Nested(size_t levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonNestingWithinTest, CountsTheDeepestLevel) {
  EXPECT_TRUE(JsonNestingWithin("", 0));
  EXPECT_TRUE(JsonNestingWithin("42", 0));
  EXPECT_FALSE(JsonNestingWithin("[]", 0));
  EXPECT_TRUE(JsonNestingWithin(Nested(32), 32));
  EXPECT_FALSE(JsonNestingWithin(Nested(33), 32));
  // Siblings do not add up: only the deepest branch counts.
  EXPECT_TRUE(JsonNestingWithin(R"({"a":[1],"b":{"c":[2]},"d":[[3]]})", 3));
  EXPECT_FALSE(JsonNestingWithin(R"({"a":[1],"b":{"c":[2]},"d":[[3]]})", 2));
}

TEST(JsonNestingWithinTest, IgnoresBracketsInsideStrings) {
  EXPECT_TRUE(JsonNestingWithin(R"({"k":"[[[[{{{{"})", 1));
  // An escaped quote does not end the string; the brackets after it are still inside it.
  EXPECT_TRUE(JsonNestingWithin(R"({"k":"\"[[[["})", 1));
  // An escaped backslash does end it: the brackets after the closing quote count.
  EXPECT_FALSE(JsonNestingWithin(R"({"k":"\\",[[[]]]})", 3));
}

TEST(JsonNestingWithinTest, StrayClosersDoNotBuyExtraDepth) {
  EXPECT_FALSE(JsonNestingWithin("]]]]" + Nested(5), 4));
  EXPECT_TRUE(JsonNestingWithin("]]]]" + Nested(4), 4));
}

TEST(JsonNestingWithinTest, StopsAtTheLimitOnHugeInput) {
  // Unbalanced megabytes of openers answer false rather than overflowing anything.
  EXPECT_FALSE(JsonNestingWithin(std::string(1 << 20, '{'), 100));
}

}  // namespace
}  // namespace warren::base
