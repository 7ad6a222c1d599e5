#include "runtime/testing/fake_runtime.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace warren::runtime::testing {
namespace {

using namespace std::chrono_literals;

SandboxSpec Spec(const std::string& id) {
  SandboxSpec s;
  s.id = id;
  s.layers = {"/layers/base"};
  s.writable_dir = "/rw/" + id;
  s.command = {"/usr/local/bin/warren-envd"};
  return s;
}

TEST(FakeRuntimeTest, FollowsTheRuntimeStateMachine) {
  FakeRuntime rt;
  ASSERT_TRUE(rt.Create(Spec("a")).ok());
  EXPECT_EQ(rt.Create(Spec("a")).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(rt.Pause("a").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(rt.Start("a").ok());
  EXPECT_EQ(rt.Start("a").code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(rt.Pause("a").ok());
  EXPECT_EQ(rt.Inspect("a")->state, SandboxState::kPaused);
  ASSERT_TRUE(rt.Resume("a").ok());
  ASSERT_TRUE(rt.Stop("a", 1s).ok());
  EXPECT_EQ(rt.Inspect("a")->state, SandboxState::kStopped);
  ASSERT_TRUE(rt.Destroy("a").ok());
  EXPECT_EQ(rt.Inspect("a").status().code(), StatusCode::kNotFound);
  SandboxSpec bad = Spec("b");
  bad.resources.memory_bytes = 10;
  EXPECT_EQ(rt.Create(bad).code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(rt.Calls(),
              ::testing::ElementsAre("Create a", "Create a", "Pause a", "Start a", "Start a",
                                     "Pause a", "Resume a", "Stop a", "Destroy a", "Create b"));
}

TEST(FakeRuntimeTest, InjectedFailuresExitsAndAdoption) {
  FakeRuntime rt;
  std::vector<std::string> exits;
  rt.SetExitCallback([&](const std::string& id, const ExitStatus& e) {
    exits.push_back(id + ":" + std::to_string(e.exit_code));
  });
  rt.FailNext("Start", ResourceExhaustedError("no pids left"));
  ASSERT_TRUE(rt.Create(Spec("a")).ok());
  EXPECT_EQ(rt.Start("a").code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(rt.Inspect("a")->state, SandboxState::kCreated) << "a failed call changes nothing";
  ASSERT_TRUE(rt.Start("a").ok());
  rt.SimulateExit("a", ExitStatus{2, 0, false, false});
  EXPECT_THAT(exits, ::testing::ElementsAre("a:2"));
  EXPECT_EQ(rt.Wait("a", 1s)->exit_code, 2);

  rt.SeedForAdoption(Spec("old"), SandboxState::kRunning);
  rt.AddOrphan(
      Orphan{"ghost", "/sys/fs/cgroup/memory/warren/ghost", "cgroup without a state record"});
  auto report = rt.Adopt();
  ASSERT_TRUE(report.ok());
  ASSERT_EQ(report->adopted.size(), 1u);
  EXPECT_EQ(report->adopted[0].id, "old");
  ASSERT_EQ(report->orphans.size(), 1u);
  EXPECT_TRUE(rt.RemoveOrphan(report->orphans[0]).ok());
  EXPECT_EQ(rt.Inspect("old")->state, SandboxState::kRunning);
}

TEST(FakeRuntimeTest, DialGoesToARoutedHostPort) {
  int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(listener, 4), 0);
  socklen_t len = sizeof a;
  getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);

  FakeRuntime rt;
  ASSERT_TRUE(rt.Create(Spec("a")).ok());
  EXPECT_EQ(rt.Dial("a", 49983, 1s).status().code(), StatusCode::kFailedPrecondition);
  ASSERT_TRUE(rt.Start("a").ok());
  EXPECT_EQ(rt.Dial("a", 49983, 1s).status().code(), StatusCode::kUnavailable);
  rt.RouteDial("a", 49983, ntohs(a.sin_port));
  auto fd = rt.Dial("a", 49983, 1s);
  ASSERT_TRUE(fd.ok()) << fd.status();
  int accepted = accept(listener, nullptr, nullptr);
  EXPECT_GE(accepted, 0);
  close(accepted);
  close(listener);
}

}  // namespace
}  // namespace warren::runtime::testing
