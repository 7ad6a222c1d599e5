// Pause/resume, stop/start, wait, exits, stats and dialing, as the node agent uses them.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <thread>

#include "base/small_file.h"
#include "os/netns.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using namespace std::chrono_literals;

uint64_t Cpu(Runtime& rt, const std::string& id) {
  auto s = rt.Stats(id);
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->cpu_usage_ns : 0;
}

TEST_F(SandboxTest, PauseFreezesABusyLoopAndResumeContinuesIt) {
  ASSERT_TRUE(rt_->Create(ShellSpec("busy", "while :; do :; done")).ok());
  ASSERT_OK(rt_->Start("busy"));
  std::this_thread::sleep_for(200ms);
  uint64_t running = Cpu(*rt_, "busy");
  std::this_thread::sleep_for(300ms);
  EXPECT_GT(Cpu(*rt_, "busy"), running) << "the loop should be burning CPU";

  ASSERT_OK(rt_->Pause("busy"));
  EXPECT_EQ(rt_->Inspect("busy")->state, SandboxState::kPaused);
  EXPECT_OK(rt_->Pause("busy"));  // pausing twice is fine
  uint64_t frozen = Cpu(*rt_, "busy");
  std::this_thread::sleep_for(500ms);
  EXPECT_EQ(Cpu(*rt_, "busy"), frozen) << "no CPU while paused";

  ASSERT_OK(rt_->Resume("busy"));
  EXPECT_EQ(rt_->Inspect("busy")->state, SandboxState::kRunning);
  std::this_thread::sleep_for(300ms);
  EXPECT_GT(Cpu(*rt_, "busy"), frozen) << "the loop continues";
}

TEST_F(SandboxTest, DestroyingAPausedSandboxWorks) {
  ASSERT_OK(rt_->Create(ShellSpec("pd", "sleep 100")));
  ASSERT_OK(rt_->Start("pd"));
  ASSERT_OK(rt_->Pause("pd"));
  Status st = rt_->Destroy("pd");
  EXPECT_TRUE(st.ok()) << st;
  EXPECT_EQ(rt_->Inspect("pd").status().code(), StatusCode::kNotFound);
}

TEST_F(SandboxTest, StopKeepsTheWritableLayerAndStartRunsAgain) {
  SandboxSpec spec = ShellSpec("again", "echo run >> /root/runs; wc -l < /root/runs; sleep 100");
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("again"));
  // busybox sh as pid 1 ignores SIGTERM: Stop escalates to SIGKILL after the grace period.
  Status st = rt_->Stop("again", 200ms);
  ASSERT_TRUE(st.ok()) << st;
  auto info = rt_->Inspect("again");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kStopped);
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_EQ(info->last_exit->signal, SIGKILL);
  ASSERT_OK(rt_->Start("again"));
  EXPECT_EQ(rt_->Start("again").code(), StatusCode::kFailedPrecondition) << "already running";
  ASSERT_OK(rt_->Stop("again", 100ms));
  EXPECT_THAT(ReadLog("again"), HasSubstr("1\n2\n"));
}

TEST_F(SandboxTest, StopLetsAProcessThatHandlesTermExitOnItsOwn) {
  SandboxSpec spec =
      ShellSpec("term", "trap 'echo got-term; exit 7' TERM; while :; do sleep 0.1; done");
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("term"));
  std::this_thread::sleep_for(200ms);
  ASSERT_OK(rt_->Stop("term", 5s));
  auto info = rt_->Inspect("term");
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_EQ(info->last_exit->exit_code, 7);
  EXPECT_THAT(ReadLog("term"), HasSubstr("got-term"));
}

TEST_F(SandboxTest, ExitCallbackAndWaitReportTheExitCode) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::string, ExitStatus>> exits;
  rt_->SetExitCallback([&](const std::string& id, const ExitStatus& e) {
    std::lock_guard lock(mu);
    exits.emplace_back(id, e);
    cv.notify_all();
  });
  ASSERT_TRUE(rt_->Create(ShellSpec("code", "sleep 0.2; exit 3")).ok());
  ASSERT_OK(rt_->Start("code"));
  EXPECT_EQ(rt_->Wait("code", 10ms).status().code(), StatusCode::kDeadlineExceeded);
  auto exit = rt_->Wait("code", 10s);
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_FALSE(exit->oom_killed);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return !exits.empty(); }));
  EXPECT_EQ(exits.size(), 1u) << "one callback per exit";
  EXPECT_EQ(exits[0].first, "code");
  EXPECT_EQ(exits[0].second.exit_code, 3);
}

TEST_F(SandboxTest, ListInspectAndStatsDescribeSandboxes) {
  ASSERT_TRUE(
      rt_->Create(ShellSpec("s1", "head -c 1048576 /dev/urandom > /root/blob; sleep 100")).ok());
  ASSERT_OK(rt_->Create(ShellSpec("s2", "true")));
  ASSERT_OK(rt_->Start("s1"));
  auto list = rt_->List();
  ASSERT_EQ(list.size(), 2u);
  auto s2 = rt_->Inspect("s2");
  EXPECT_EQ(s2->state, SandboxState::kCreated);
  EXPECT_EQ(rt_->Inspect("s1")->state, SandboxState::kRunning);
  EXPECT_GT(rt_->Inspect("s1")->pid, 0);
  Result<SandboxStats> stats = InternalError("not yet");
  for (int i = 0; i < 100; ++i) {
    stats = rt_->Stats("s1");
    if (stats.ok() && stats->disk_bytes >= (1u << 20)) break;
    std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->disk_bytes, 1u << 20);
  EXPECT_GT(stats->memory_bytes, 0u);
  EXPECT_GE(stats->pids, 1u);
  EXPECT_EQ(rt_->Pause("s2").code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(rt_->Inspect("nope").status().code(), StatusCode::kNotFound);
}

TEST_F(SandboxTest, DialReachesOnlyTheSandboxsLoopback) {
  SandboxSpec spec = ShellSpec("web", "echo hello > /www; httpd -f -p 127.0.0.1:18080 -h /");
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("web"));
  Result<base::UniqueFd> fd = UnavailableError("not yet");
  for (int i = 0; i < 200 && !fd.ok(); ++i) {
    fd = rt_->Dial("web", 18080, 1s);
    if (!fd.ok()) {
      ASSERT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status();
      std::this_thread::sleep_for(10ms);
    }
  }
  ASSERT_TRUE(fd.ok()) << fd.status();
  // Speak HTTP over the socket from the host's network namespace.
  int flags = fcntl(fd->get(), F_GETFL);
  fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK);
  std::string req = "GET /www HTTP/1.0\r\n\r\n";
  ASSERT_EQ(write(fd->get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string resp;
  char buf[512];
  ssize_t n;
  while ((n = read(fd->get(), buf, sizeof buf)) > 0) resp.append(buf, static_cast<size_t>(n));
  EXPECT_THAT(resp, HasSubstr("200 OK"));
  EXPECT_THAT(resp, HasSubstr("hello"));
  // Nothing listens on 18080 on the host's loopback.
  auto host = os::DialInNetnsOfPid(getpid(), 18080, 1s);
  EXPECT_FALSE(host.ok());
  // An unused port inside: Unavailable, so a caller knows to retry.
  EXPECT_EQ(rt_->Dial("web", 18081, 1s).status().code(), StatusCode::kUnavailable);

  // The event loop's dial answers at once, the same way: a connected socket to the sandbox's
  // loopback, Unavailable for a closed port, NotFound for no such sandbox, FailedPrecondition
  // once it stopped.
  auto now = rt_->DialNow("web", 18080);
  ASSERT_TRUE(now.has_value()) << "nothing holds the sandbox: DialNow must not decline";
  ASSERT_TRUE(now->ok()) << now->status();
  flags = fcntl((*now)->get(), F_GETFL);
  fcntl((*now)->get(), F_SETFL, flags & ~O_NONBLOCK);
  ASSERT_EQ(write((*now)->get(), req.data(), req.size()), static_cast<ssize_t>(req.size()));
  std::string again;
  while ((n = read((*now)->get(), buf, sizeof buf)) > 0) again.append(buf, static_cast<size_t>(n));
  EXPECT_THAT(again, HasSubstr("hello"));
  auto closed = rt_->DialNow("web", 18081);
  ASSERT_TRUE(closed.has_value());
  EXPECT_EQ(closed->status().code(), StatusCode::kUnavailable);
  auto unknown = rt_->DialNow("nope", 18080);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ(unknown->status().code(), StatusCode::kNotFound);
  ASSERT_OK(rt_->Stop("web", 0ms));
  auto stopped = rt_->DialNow("web", 18080);
  ASSERT_TRUE(stopped.has_value());
  EXPECT_EQ(stopped->status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace warren::runtime::testing
