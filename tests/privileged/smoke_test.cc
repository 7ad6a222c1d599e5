#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(SandboxTest, RunsAShellAsPidOne) {
  std::string out = Run(ShellSpec("smoke", "echo hello; echo pid=$$; hostname; id"));
  EXPECT_THAT(out, HasSubstr("hello"));
  EXPECT_THAT(out, HasSubstr("pid=1"));
  EXPECT_THAT(out, HasSubstr("smoke"));
  auto info = rt_->Inspect("smoke");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kStopped);
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_EQ(info->last_exit->exit_code, 0);
}

}  // namespace
}  // namespace warren::runtime::testing
