#include "server/e2b/sandbox_locator.h"

#include <gtest/gtest.h>

namespace warren::server::e2b {
namespace {

TEST(SandboxLocatorTest, RemembersForgetsAndStaysBounded) {
  SandboxLocator locator(/*capacity=*/2);
  EXPECT_FALSE(locator.Hint("i1"));
  locator.Remember("i1", "team-a", "pool-abcde");
  ASSERT_TRUE(locator.Hint("i1"));
  EXPECT_EQ(*locator.Hint("i1"), std::make_pair(std::string("team-a"), std::string("pool-abcde")));
  // Seen elsewhere later (a hint is only where it was last seen).
  locator.Remember("i1", "team-a", "pool-fghij");
  EXPECT_EQ(locator.Hint("i1")->second, "pool-fghij");
  locator.Forget("i1");
  EXPECT_FALSE(locator.Hint("i1"));
  // Full: learning one more starts over rather than growing.
  locator.Remember("i1", "a", "1");
  locator.Remember("i2", "a", "2");
  locator.Remember("i2", "a", "2b");  // already known: nothing dropped
  EXPECT_TRUE(locator.Hint("i1"));
  locator.Remember("i3", "a", "3");
  EXPECT_FALSE(locator.Hint("i1"));
  EXPECT_FALSE(locator.Hint("i2"));
  EXPECT_TRUE(locator.Hint("i3"));
}

}  // namespace
}  // namespace warren::server::e2b
