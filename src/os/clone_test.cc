// Clone without namespaces (unprivileged) and the pidfd that follows the child.
#include "os/clone.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "os/pidfd.h"

namespace warren::os {
namespace {

using namespace std::chrono_literals;

int ExitSeven(void*) noexcept { return 7; }
int SleepForever(void*) noexcept {
  for (;;) pause();
}

TEST(CloneTest, ChildRunsTheFunctionAndIsReapedThroughItsPidfd) {
  auto child = Clone(CloneRequest{}, ExitSeven, nullptr);
  ASSERT_TRUE(child.ok()) << child.status();
  Pidfd p(child->pid, std::move(child->pidfd));
  ASSERT_TRUE(p.WaitForExit(5s).ok());
  EXPECT_TRUE(p.HasExited());
  auto exit = p.TryReap();
  ASSERT_TRUE(exit.ok()) << exit.status();
  ASSERT_TRUE(exit->has_value());
  EXPECT_EQ((*exit)->exit_code, 7);
  EXPECT_EQ((*exit)->signal, 0);
}

TEST(CloneTest, SignalsWaitsAndTimesOut) {
  auto child = Clone(CloneRequest{}, SleepForever, nullptr);
  ASSERT_TRUE(child.ok());
  Pidfd p(child->pid, std::move(child->pidfd));
  EXPECT_EQ(p.WaitForExit(20ms).code(), StatusCode::kDeadlineExceeded);
  auto running = p.TryReap();
  ASSERT_TRUE(running.ok());
  EXPECT_FALSE(running->has_value());
  ASSERT_TRUE(p.SendSignal(SIGKILL).ok());
  ASSERT_TRUE(p.WaitForExit(5s).ok());
  auto exit = p.TryReap();
  ASSERT_TRUE(exit.ok() && exit->has_value());
  EXPECT_EQ((*exit)->signal, SIGKILL);
  EXPECT_TRUE(p.SendSignal(SIGKILL).ok()) << "signalling an exited process is not an error";
}

TEST(CloneTest, PidfdOfAProcessThatIsNotOurChildCannotReap) {
  auto self = Pidfd::Open(getppid());
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_FALSE(self->HasExited());
  EXPECT_EQ(self->TryReap().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace warren::os
