// Resource limits as a user notices them: the memory hog dies, the fork bomb stalls, the busy
// loop gets its quota.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <thread>

#include "os/cgroup.h"
#include "os/thread_priority.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;

TEST_F(SandboxTest, MemoryHogIsOomKilledAtItsLimit) {
  // The hog is a child shell that reads 200 MB into a variable; pid 1 reports how it ended.
  SandboxSpec spec =
      ShellSpec("hog",
                "sh -c 'x=$(head -c 200000000 /dev/zero | tr \"\\0\" a); echo survived'; "
                "echo hog-exit=$?");
  spec.resources.memory_bytes = 32 << 20;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("hog"));
  auto exit = rt_->Wait("hog", std::chrono::seconds(60));
  ASSERT_TRUE(exit.ok()) << exit.status();
  std::string out = ReadLog("hog");
  // Once (2026-12-06, under the suite's load) the log came back empty; how pid 1 ended says
  // whether it was killed too or its own write failed.
  EXPECT_THAT(out, HasSubstr("hog-exit=137"))  // SIGKILL
      << "pid 1 ended with code " << exit->exit_code << ", signal " << exit->signal
      << ", oom_killed " << exit->oom_killed;
  EXPECT_THAT(out, ::testing::Not(HasSubstr("survived")));
  auto stats = rt_->Stats("hog");
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->oom_kills, 1u);
  EXPECT_EQ(stats->memory_limit_bytes, uint64_t{32} << 20);
}

TEST_F(SandboxTest, StatsOfAnIdleSandboxFollowWhatChangesIt) {
  // Idle for 1.5 s (Stats then reads its CPU time alone), then it writes 2 MiB and idles again.
  SandboxSpec spec =
      ShellSpec("idle", "sleep 1.5; head -c 2097152 /dev/urandom > /root/blob; sleep 100");
  spec.resources.memory_bytes = 64 << 20;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("idle"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto first = rt_->Stats("idle");
  ASSERT_TRUE(first.ok()) << first.status();
  auto again = rt_->Stats("idle");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->cpu_usage_ns, first->cpu_usage_ns) << "sleep spends no CPU";
  EXPECT_LT(again->disk_bytes, uint64_t{1} << 20);
  EXPECT_EQ(again->memory_limit_bytes, uint64_t{64} << 20);
  // A limit changed from outside, with no CPU spent inside, shows at once.
  Resources bigger = spec.resources;
  bigger.memory_bytes = 96 << 20;
  ASSERT_OK(rt_->UpdateResources("idle", bigger));
  auto updated = rt_->Stats("idle");
  ASSERT_TRUE(updated.ok()) << updated.status();
  EXPECT_EQ(updated->memory_limit_bytes, uint64_t{96} << 20);
  // What it does when it wakes shows in the next sample.
  Result<SandboxStats> after = InternalError("not yet");
  for (int i = 0; i < 250; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = rt_->Stats("idle");
    if (after.ok() && after->disk_bytes >= (uint64_t{2} << 20)) break;
  }
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_GE(after->disk_bytes, uint64_t{2} << 20);
  EXPECT_GT(after->cpu_usage_ns, first->cpu_usage_ns);
}

TEST_F(SandboxTest, PidOneKilledByTheOomKillerIsReportedAsSuch) {
  SandboxSpec spec = ShellSpec("hog1", "x=$(head -c 200000000 /dev/zero | tr '\\0' a)");
  spec.resources.memory_bytes = 16 << 20;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("hog1"));
  auto exit = rt_->Wait("hog1", std::chrono::seconds(60));
  ASSERT_TRUE(exit.ok()) << exit.status();
  EXPECT_EQ(exit->signal, SIGKILL);
  EXPECT_TRUE(exit->oom_killed);
}

TEST_F(SandboxTest, ForkBombStopsAtThePidsLimit) {
  SandboxSpec spec = ShellSpec("bomb", "f() { f | f & }; f; sleep 30");
  spec.resources.pids = 40;
  spec.resources.cpu_millicores = 500;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("bomb"));
  // Sample for at least a second and until the shells report failed forks (the pids limit
  // answering EAGAIN); the count must never go past the limit. Bomb processes exit and respawn
  // all the time, so a sample rarely catches exactly 40.
  uint64_t most = 0;
  bool refused = false;
  for (int i = 0; i < 200 && (i < 20 || !refused); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    auto stats = rt_->Stats("bomb");
    ASSERT_TRUE(stats.ok()) << stats.status();
    most = std::max(most, stats->pids);
    refused = ReadLog("bomb").find("Resource temporarily unavailable") != std::string::npos;
  }
  EXPECT_TRUE(refused) << "forks should fail at the limit: " << ReadLog("bomb").substr(0, 300);
  EXPECT_LE(most, 40u);
  EXPECT_GE(most, 20u);
  // The host is unaffected and the sandbox still goes away cleanly (TearDown checks).
  Status st = rt_->Destroy("bomb");
  EXPECT_TRUE(st.ok()) << st;
}

TEST_F(SandboxTest, ASandboxStartedByBackgroundWorkRunsAtTheNormalPriority) {
  // A pool refill starts sandboxes from a thread at a lowered priority (os::ScopedThreadNice);
  // the sandbox must run its command as any other, with or without a user namespace (where
  // pid 1 has no CAP_SYS_NICE of the host's to take the priority back itself).
  int normal = getpriority(PRIO_PROCESS, 0);
  // Field 19 of /proc/<pid>/stat is the nice value (the command name here has no spaces).
  std::string script = "set -- $(cat /proc/self/stat); echo nice=${19}";
  SandboxSpec plain = ShellSpec("plain", script);
  SandboxSpec userns = ShellSpec("userns", script);
  userns.user_namespace = true;
  SandboxSpec broken = ShellSpec("broken", "");
  broken.command = {"/usr/bin/python3", "-c", "print(1)"};
  std::string out_plain, out_userns;
  Status broken_start;
  {
    os::ScopedThreadNice background(os::kBackgroundNiceIncrement);
    if (!background.lowered()) GTEST_SKIP() << "this thread cannot lower its priority and back";
    out_plain = Run(plain);
    out_userns = Run(userns);
    ASSERT_OK(rt_->Create(broken));
    broken_start = rt_->Start("broken");
  }
  // A failed exec of such a sandbox still says why.
  EXPECT_EQ(broken_start.code(), StatusCode::kFailedPrecondition) << broken_start;
  EXPECT_THAT(broken_start.message(), HasSubstr("'/usr/bin/python3' not found"));
  EXPECT_EQ(out_plain, fmt::format("nice={}\n", normal));
  EXPECT_EQ(out_userns, fmt::format("nice={}\n", normal));
  // Outside background work nothing changes.
  EXPECT_EQ(Run(ShellSpec("normal", script)), fmt::format("nice={}\n", normal));
}

TEST_F(SandboxTest, ALowerCpuWeightGetsLessOfABusyCpuUntilItIsRaised) {
  // Pool stock starts at a tenth of the weight (node::kPoolStockCpuWeight) so that, while
  // refills start, sandboxes in use get the CPU. Each sandbox here spins one loop per CPU, so
  // the two compete on every core.
  const long cpus = std::max(1L, sysconf(_SC_NPROCESSORS_ONLN));
  const std::string spin = fmt::format(
      "i=0; while [ $i -lt {} ]; do (while :; do :; done) & i=$((i+1)); done; wait", cpus);
  SandboxSpec full = ShellSpec("full", spin);
  SandboxSpec low = ShellSpec("low", spin);
  low.cpu_weight = 10;
  ASSERT_OK(rt_->Create(full));
  ASSERT_OK(rt_->Create(low));
  ASSERT_OK(rt_->Start("full"));
  ASSERT_OK(rt_->Start("low"));
  // CPU seconds each got over one second of contention.
  auto share = [&]() -> std::pair<double, double> {
    auto a_full = rt_->Stats("full");
    auto a_low = rt_->Stats("low");
    std::this_thread::sleep_for(std::chrono::seconds(1));
    auto b_full = rt_->Stats("full");
    auto b_low = rt_->Stats("low");
    EXPECT_TRUE(a_full.ok() && a_low.ok() && b_full.ok() && b_low.ok());
    if (!a_full.ok() || !a_low.ok() || !b_full.ok() || !b_low.ok()) return {0, 0};
    return {(b_full->cpu_usage_ns - a_full->cpu_usage_ns) / 1e9,
            (b_low->cpu_usage_ns - a_low->cpu_usage_ns) / 1e9};
  };
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // every loop running
  auto [full_s, low_s] = share();
  // 10 against 100 is a ratio of 1:10; the host's own load blurs it, not by a factor of 3.
  EXPECT_GT(full_s, 0.2);
  EXPECT_LT(low_s, full_s / 3) << "full " << full_s << " s, low " << low_s << " s of CPU";
  ASSERT_OK(rt_->SetCpuWeight("low", os::kDefaultCpuWeight));
  auto [full_after, low_after] = share();
  EXPECT_GT(low_after, full_after / 2)
      << "full " << full_after << " s, low " << low_after << " s of CPU after the raise";
  // Out of range: refused, naming the value.
  Status zero = rt_->SetCpuWeight("low", 0);
  EXPECT_EQ(zero.code(), StatusCode::kInvalidArgument) << zero;
  EXPECT_THAT(zero.message(), HasSubstr("cpu weight 0"));
  SandboxSpec bad = ShellSpec("bad", "true");
  bad.cpu_weight = 20000;
  Status refused = rt_->Create(bad);
  EXPECT_EQ(refused.code(), StatusCode::kInvalidArgument) << refused;
  EXPECT_THAT(refused.message(), HasSubstr("cpu_weight 20000"));
  ASSERT_OK(rt_->Destroy("full"));
  ASSERT_OK(rt_->Destroy("low"));
}

TEST_F(SandboxTest, CpuQuotaCapsABusyLoop) {
  SandboxSpec spec = ShellSpec("spin", "while :; do :; done");
  spec.resources.cpu_millicores = 200;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("spin"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  auto a = rt_->Stats("spin");
  auto t0 = std::chrono::steady_clock::now();
  std::this_thread::sleep_for(std::chrono::seconds(1));
  auto b = rt_->Stats("spin");
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(a.ok() && b.ok());
  double used = (b->cpu_usage_ns - a->cpu_usage_ns) / 1e9;
  // 200m is 0.2 CPU-seconds per second; allow one extra period of slack.
  EXPECT_LE(used, 0.2 * wall + 0.1) << "used " << used << " s of CPU in " << wall << " s";
  EXPECT_GT(used, 0.0);
}

}  // namespace
}  // namespace warren::runtime::testing
