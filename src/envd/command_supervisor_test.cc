#include "envd/command_supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>

#include "envd/log_ring.h"

namespace warren::envd {
namespace {

using namespace std::chrono_literals;

os::SpawnOptions Bash(const std::string& script) {
  os::SpawnOptions o;
  o.argv = {"/bin/bash", "-c", script};
  o.env = {"PATH=/usr/bin:/bin"};
  o.cwd = "/tmp";
  o.credentials = os::Credentials{getuid(), getgid(), {getgid()}};
  return o;
}

TEST(CommandSupervisorTest, EveryByteWrittenBeforeTheExitIsInTheLogOnceDrained) {
  // More than a pipe holds, and the last line written just before the exit.
  LogRing log(4 << 20);
  CommandSupervisor supervisor(log);
  ASSERT_TRUE(
      supervisor.Start(Bash("head -c 1000000 /dev/zero | tr '\\0' x; echo; echo last")).ok());
  ASSERT_TRUE(supervisor.WaitExited(30s));
  ASSERT_TRUE(supervisor.WaitOutputDrained(30s));
  EXPECT_EQ(log.total_bytes(), 1000000u + 1 + 5);
  EXPECT_TRUE(log.Snapshot().ends_with("x\nlast\n"));
  EXPECT_EQ(supervisor.wait_status(), 0);
}

TEST(CommandSupervisorTest, AProcessLeftHoldingTheOutputKeepsItOpenUntilItEnds) {
  LogRing log(1 << 20);
  CommandSupervisor supervisor(log);
  ASSERT_TRUE(supervisor.Start(Bash("sleep 30 & echo $!")).ok());
  ASSERT_TRUE(supervisor.WaitExited(30s));
  EXPECT_FALSE(supervisor.WaitOutputDrained(200ms)) << "the background sleep holds stdout";
  std::string snapshot;
  for (int i = 0; i < 3000 && (snapshot = log.Snapshot()).find('\n') == std::string::npos; ++i) {
    usleep(10'000);
  }
  ASSERT_NE(snapshot.find('\n'), std::string::npos) << "no pid printed: " << snapshot;
  pid_t sleeper = std::stoi(snapshot);
  ASSERT_GT(sleeper, 1);
  ASSERT_EQ(kill(sleeper, SIGKILL), 0);
  EXPECT_TRUE(supervisor.WaitOutputDrained(30s));
}

TEST(CommandSupervisorTest, ASupervisorMayGoBeforeItsCommandEndsOrItsOutputDrains) {
  // The exit callback and the copying thread outlive a supervisor destroyed at once, or right
  // after it saw the drain (the thread still notifying): neither may touch what it owned.
  static LogRing log(1 << 20);
  for (int i = 0; i < 50; ++i) {
    // On the heap, so that a sanitizer sees any touch after it is gone.
    auto supervisor = std::make_unique<CommandSupervisor>(log);
    ASSERT_TRUE(supervisor->Start(Bash(i % 2 ? "echo drained" : "sleep 0.01; echo later")).ok());
    if (i % 2) {
      ASSERT_TRUE(supervisor->WaitOutputDrained(30s));
    }
  }
  // Every command still runs to its end and its line reaches the log.
  auto lines = [] {
    std::string all = log.Snapshot();
    return static_cast<size_t>(std::count(all.begin(), all.end(), '\n'));
  };
  for (int i = 0; i < 3000 && lines() < 50; ++i) usleep(10'000);
  EXPECT_EQ(lines(), 50u) << log.Snapshot();
  // The reaper runs exit callbacks one at a time, in the order the children end: once a command
  // started after every line arrived has been seen to exit, the callbacks of the 50 (whose
  // supervisors are gone) are done too, and none runs into this process's exit.
  CommandSupervisor last(log);
  ASSERT_TRUE(last.Start(Bash("sleep 0.05")).ok());
  EXPECT_TRUE(last.WaitExited(30s));
}

TEST(CommandSupervisorTest, NothingStartedIsDrained) {
  LogRing log(1024);
  CommandSupervisor supervisor(log);
  EXPECT_TRUE(supervisor.WaitOutputDrained(0ms));
  EXPECT_TRUE(supervisor.WaitExited(0ms));
}

}  // namespace
}  // namespace warren::envd
