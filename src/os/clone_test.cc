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

// Writes through the pointer it is given: with share_memory the caller sees it, with a copy
// it does not.
int MarkAndExit(void* arg) noexcept {
  *static_cast<volatile int*>(arg) = 42;
  return 3;
}

int ExecTrue(void*) noexcept {
  ResetSignalsForExec();
  char arg0[] = "true";
  char* argv[] = {arg0, nullptr};
  char* envp[] = {nullptr};
  execve("/bin/true", argv, envp);
  return 127;
}

ProcessExit Reap(ClonedProcess& child) {
  Pidfd p(child.pid, std::move(child.pidfd));
  EXPECT_TRUE(p.WaitForExit(5s).ok());
  auto exit = p.TryReap();
  EXPECT_TRUE(exit.ok() && exit->has_value());
  return exit.ok() && exit->has_value() ? **exit : ProcessExit{};
}

TEST(CloneTest, AChildSharingMemoryRunsOnItsOwnStackInTheCallersMemory) {
  volatile int mark = 0;
  auto child = Clone(CloneRequest{.share_memory = true}, MarkAndExit, const_cast<int*>(&mark));
  ASSERT_TRUE(child.ok()) << child.status();
  ProcessExit exit = Reap(*child);
  EXPECT_EQ(exit.exit_code, 3);
#if !defined(__SANITIZE_ADDRESS__)
  ASSERT_NE(child->stack, nullptr) << "no stack of its own: the child was a copy";
  EXPECT_EQ(mark, 42) << "the child wrote to a copy of our memory";
#endif

  // A copy, as before, when memory is not shared.
  mark = 0;
  auto copy = Clone(CloneRequest{}, MarkAndExit, const_cast<int*>(&mark));
  ASSERT_TRUE(copy.ok()) << copy.status();
  EXPECT_EQ(Reap(*copy).exit_code, 3);
  EXPECT_EQ(copy->stack, nullptr);
  EXPECT_EQ(mark, 0);
}

TEST(CloneTest, AChildSharingMemoryExecs) {
  auto child = Clone(CloneRequest{.share_memory = true}, ExecTrue, nullptr);
  ASSERT_TRUE(child.ok()) << child.status();
  ProcessExit exit = Reap(*child);
  EXPECT_EQ(exit.exit_code, 0) << "127: execve failed in the child";
  EXPECT_EQ(exit.signal, 0);
}

TEST(CloneTest, PidfdOfAProcessThatIsNotOurChildCannotReap) {
  auto self = Pidfd::Open(getppid());
  ASSERT_TRUE(self.ok()) << self.status();
  EXPECT_FALSE(self->HasExited());
  EXPECT_EQ(self->TryReap().status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace warren::os
