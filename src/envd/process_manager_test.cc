#include "envd/process_manager.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <thread>
#include <vector>

#include "base/encoding.h"
#include "envd/testing/collecting_sink.h"

namespace warren::envd {
namespace {

using namespace std::chrono_literals;
using testing::CollectingSink;

SpawnPlan Bash(const std::string& script, std::optional<bool> stdin = false) {
  SpawnPlan plan;
  plan.request.process.cmd = "/bin/bash";
  plan.request.process.args = {"-c", script};
  plan.request.stdin = stdin;
  plan.argv = {"/bin/bash", "-c", script};
  plan.env = {"PATH=/usr/bin:/bin", "HOME=/tmp"};
  plan.cwd = "/tmp";
  plan.credentials = {getuid(), getgid(), {getgid()}};
  return plan;
}

// Concatenated decoded output of one kind ("stdout", "stderr", "pty") from the messages.
std::string Output(const std::vector<std::string>& messages, const std::string& kind) {
  std::string out;
  const std::string key = "\"" + kind + "\":\"";
  for (const auto& m : messages) {
    auto at = m.find(key);
    if (at == std::string::npos) continue;
    auto start = at + key.size();
    out += *base::Base64Decode(m.substr(start, m.find('"', start) - start));
  }
  return out;
}

class ProcessManagerTest : public ::testing::Test {
 protected:
  std::pair<std::shared_ptr<CollectingSink>, std::shared_ptr<ManagedProcess>> Start(
      SpawnPlan plan, StreamOptions options = {}) {
    auto sink = std::make_shared<CollectingSink>();
    auto session = StreamSession::Create(sink, timers_, options, KeepaliveEventJson());
    auto p = manager_.Start(std::move(plan), session, options.timeout);
    EXPECT_TRUE(p.ok()) << p.status();
    return {sink, p.ok() ? *p : nullptr};
  }

  TimerQueue timers_;
  ProcessManager manager_{timers_};
};

TEST_F(ProcessManagerTest, StreamsStartThenOutputThenEndThenOneEos) {
  auto [sink, p] = Start(Bash("echo out; echo err >&2; exit 3"));
  auto end = sink->WaitFinished(10s);
  ASSERT_TRUE(end.has_value());
  EXPECT_TRUE(end->ok());
  auto m = sink->messages();
  ASSERT_GE(m.size(), 2u);
  EXPECT_EQ(m.front(), StartEventJson(p->pid()));
  EXPECT_NE(m.back().find(R"("exitCode":3)"), std::string::npos) << m.back();
  EXPECT_NE(m.back().find(R"("error":"exit status 3")"), std::string::npos);
  EXPECT_EQ(Output(m, "stdout"), "out\n");
  EXPECT_EQ(Output(m, "stderr"), "err\n");
  EXPECT_EQ(sink->finish_count(), 1);
}

TEST_F(ProcessManagerTest, StdinPipeAndCloseStdin) {
  auto [sink, p] = Start(Bash("cat", true));
  ASSERT_TRUE(p->WriteInput(InputKind::kStdin, "hello\n").ok());
  EXPECT_EQ(p->WriteInput(InputKind::kPty, "x").code(), StatusCode::kInternal);
  ASSERT_TRUE(p->CloseStdin().ok());
  ASSERT_TRUE(p->CloseStdin().ok());  // idempotent
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  EXPECT_EQ(Output(sink->messages(), "stdout"), "hello\n");
}

TEST_F(ProcessManagerTest, WithoutStdinTheProcessReadsDevNull) {
  auto [sink, p] = Start(Bash("cat; echo done", false));
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  EXPECT_EQ(Output(sink->messages(), "stdout"), "done\n");
  EXPECT_EQ(p->WriteInput(InputKind::kStdin, "x").code(), StatusCode::kInternal);
}

TEST_F(ProcessManagerTest, KillReportsSignalAndForgetsTheProcess) {
  auto [sink, p] = Start(Bash("sleep 30"));
  EXPECT_EQ(manager_.List().size(), 1u);
  ASSERT_TRUE(p->Signal(SIGKILL).ok());
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  EXPECT_NE(sink->messages().back().find(R"("exitCode":-1)"), std::string::npos);
  EXPECT_NE(sink->messages().back().find("signal: killed"), std::string::npos);
  EXPECT_EQ(p->Signal(SIGKILL).code(), StatusCode::kNotFound);
  EXPECT_EQ(p->Signal(SIGHUP).code(), StatusCode::kUnimplemented);
  EXPECT_TRUE(manager_.List().empty());
  // Still visible to Connect for a while: a late subscriber gets start and end.
  auto late = manager_.Find({p->pid(), std::nullopt}, true);
  ASSERT_TRUE(late.ok());
  auto late_sink = std::make_shared<CollectingSink>();
  (*late)->Subscribe(StreamSession::Create(late_sink, timers_, {}, KeepaliveEventJson()));
  ASSERT_TRUE(late_sink->WaitFinished(1s).has_value());
  ASSERT_EQ(late_sink->messages().size(), 2u);
  EXPECT_EQ(manager_.Find({p->pid(), std::nullopt}).status().message(),
            "process with pid " + std::to_string(p->pid()) + " not found");
}

TEST_F(ProcessManagerTest, DeadlineKillsTheProcessAndEndsWithDeadlineExceeded) {
  StreamOptions options;
  options.timeout = 300ms;
  auto [sink, p] = Start(Bash("sleep 30"), options);
  auto end = sink->WaitFinished(10s);
  ASSERT_TRUE(end.has_value());
  EXPECT_EQ(end->code(), StatusCode::kDeadlineExceeded);
  // The process is gone too (its pump reports the end to nobody).
  for (int i = 0; i < 100 && !p->ended(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(p->ended());
  EXPECT_EQ(sink->finish_count(), 1);
}

TEST_F(ProcessManagerTest, LifetimeKillsEvenWhenTheClientLeftFirst) {
  StreamOptions options;
  options.timeout = 300ms;
  auto [sink, p] = Start(Bash("sleep 30"), options);
  sink->Disconnect();  // the SDK aborts at its own deadline, maybe first
  for (int i = 0; i < 100 && !p->ended(); ++i) std::this_thread::sleep_for(50ms);
  EXPECT_TRUE(p->ended());
}

TEST_F(ProcessManagerTest, KeepalivesFlowWhenIdleAndSubscribersFanOut) {
  StreamOptions options;
  options.keepalive = 100ms;
  auto [sink, p] = Start(Bash("sleep 0.5; echo late"), options);
  auto second = std::make_shared<CollectingSink>();
  p->Subscribe(StreamSession::Create(second, timers_, {}, KeepaliveEventJson()));
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  ASSERT_TRUE(second->WaitFinished(10s).has_value());
  EXPECT_TRUE(sink->WaitForMessage(KeepaliveEventJson(), 0ms));
  EXPECT_EQ(Output(second->messages(), "stdout"), "late\n");
  EXPECT_EQ(second->messages().front(), StartEventJson(p->pid()));
}

TEST_F(ProcessManagerTest, ClientDisconnectDoesNotKillTheProcess) {
  // A margin of a second between the check and the command's own end: a loaded machine can
  // stall this thread for a few hundred milliseconds.
  auto [sink, p] = Start(Bash("sleep 1.2; echo ok"));
  sink->Disconnect();
  std::this_thread::sleep_for(200ms);
  EXPECT_FALSE(p->ended());
  for (int i = 0; i < 500 && !p->ended(); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_TRUE(p->ended());
}

TEST_F(ProcessManagerTest, PtyEchoesInputAndResizes) {
  SpawnPlan plan = Bash("stty size; read line; echo got:$line");
  plan.request.pty = PtySize{100, 30};
  auto [sink, p] = Start(std::move(plan));
  ASSERT_TRUE(sink->WaitForMessage("\"pty\"", 5s));
  ASSERT_TRUE(p->WriteInput(InputKind::kPty, "abc\n").ok());
  EXPECT_EQ(p->WriteInput(InputKind::kStdin, "x").code(), StatusCode::kInternal);
  EXPECT_EQ(p->CloseStdin().code(), StatusCode::kInternal);
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  std::string out = Output(sink->messages(), "pty");
  EXPECT_NE(out.find("30 100"), std::string::npos) << out;
  EXPECT_NE(out.find("got:abc"), std::string::npos) << out;
}

TEST_F(ProcessManagerTest, SpawnFailureIsInvalidArgument) {
  SpawnPlan plan = Bash("true");
  plan.argv = {"/nonexistent/program"};
  auto sink = std::make_shared<CollectingSink>();
  auto session = StreamSession::Create(sink, timers_, {}, KeepaliveEventJson());
  auto p = manager_.Start(std::move(plan), session);
  EXPECT_EQ(p.status().code(), StatusCode::kInvalidArgument);
  SpawnPlan badcwd = Bash("true");
  badcwd.cwd = "/nonexistent-dir";
  auto q = manager_.Start(std::move(badcwd), session);
  EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(q.status().message().find("chdir"), std::string::npos);
}

// A sink whose Finish is slow to return, like a client on a slow link: the pump is still inside
// the session when the stream already looks finished.
class SlowFinishSink : public CollectingSink {
 public:
  void Finish(const Status& status) override {
    CollectingSink::Finish(status);
    std::this_thread::sleep_for(300ms);
    returned_ = true;
  }
  bool returned() const { return returned_; }

 private:
  std::atomic<bool> returned_{false};
};

// The manager's destructor waits for the output pumps, not only for the processes: a pump still
// ending its sessions uses the timer queue, which its owner destroys right after the manager.
TEST(ProcessManagerShutdownTest, DestructorWaitsForThePumpToEndItsSessions) {
  TimerQueue timers;
  auto manager = std::make_unique<ProcessManager>(timers);
  auto sink = std::make_shared<SlowFinishSink>();
  auto session = StreamSession::Create(sink, timers, {}, KeepaliveEventJson());
  ASSERT_TRUE(manager->Start(Bash("exit 0"), session).ok());
  session.reset();
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  manager.reset();
  EXPECT_TRUE(sink->returned());
}

// An ended process stays findable for the retention and is forgotten after it.
TEST(ProcessManagerRetentionTest, EndedProcessIsForgottenAfterTheRetention) {
  TimerQueue timers;
  ProcessManager manager(timers, 1s);
  auto sink = std::make_shared<CollectingSink>();
  auto session = StreamSession::Create(sink, timers, {}, KeepaliveEventJson());
  auto p = manager.Start(Bash("exit 0"), session);
  ASSERT_TRUE(p.ok()) << p.status();
  const ProcessSelector by_pid{(*p)->pid(), std::nullopt};
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  EXPECT_TRUE(manager.Find(by_pid, /*include_ended=*/true).ok());
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (manager.Find(by_pid, true).ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(10ms);
  }
  EXPECT_EQ(manager.Find(by_pid, true).status().code(), StatusCode::kNotFound);
}

// The retention timer of an ended process lives in the queue, which outlives the manager: when it
// fires after the manager is gone it must touch nothing of it (ASan reports the use after free
// in scripts/test-asan; in release a freed mutex or map usually crashes or hangs here).
TEST(ProcessManagerRetentionTest, RetentionTimerFiringAfterTheManagerDiedIsHarmless) {
  TimerQueue timers;
  auto manager = std::make_unique<ProcessManager>(timers, 1s);
  auto sink = std::make_shared<CollectingSink>();
  auto session = StreamSession::Create(sink, timers, {}, KeepaliveEventJson());
  auto p = manager->Start(Bash("exit 0"), session);
  ASSERT_TRUE(p.ok()) << p.status();
  const ProcessSelector by_pid{(*p)->pid(), std::nullopt};
  ASSERT_TRUE(sink->WaitFinished(10s).has_value());
  // The end is recorded (so the retention timer is scheduled) before the manager goes.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!manager->Find(by_pid, true).ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_TRUE(manager->Find(by_pid, true).ok());
  ASSERT_TRUE((*p)->ended());
  manager.reset();
  // Reuse the freed memory so a stale `this` would meet garbage rather than the old tables.
  std::vector<std::unique_ptr<std::array<unsigned char, sizeof(ProcessManager)>>> scribble;
  for (int i = 0; i < 64; ++i) {
    scribble.push_back(std::make_unique<std::array<unsigned char, sizeof(ProcessManager)>>());
    scribble.back()->fill(0xa5);
  }
  // Let the timer fire, then prove the queue still runs callbacks.
  std::this_thread::sleep_for(1500ms);
  std::atomic<bool> fired{false};
  timers.ScheduleAfter(0ms, [&] { fired = true; });
  const auto until = std::chrono::steady_clock::now() + 10s;
  while (!fired && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(5ms);
  EXPECT_TRUE(fired);
}

}  // namespace
}  // namespace warren::envd
