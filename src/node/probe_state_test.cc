#include "node/probe_state.h"

#include <gtest/gtest.h>

namespace warren::node {
namespace {

using namespace std::chrono_literals;

api::Probe ExecProbe(int32_t failure_threshold = 3, int32_t success_threshold = 1) {
  api::Probe p;
  p.exec = api::ExecAction{{"true"}};
  p.failure_threshold = failure_threshold;
  p.success_threshold = success_threshold;
  return p;
}

const ProbeOutcome kOk{true, "ok"};
const ProbeOutcome kFail{false, "connection refused"};

TEST(ProbeCounter, ReportsOnlyAfterItsThresholdsInARow) {
  ProbeCounter c(api::ResolvedTimings(ExecProbe(3, 2)), /*initially_ok=*/false);
  EXPECT_FALSE(c.Record(true));  // one success of two
  EXPECT_FALSE(c.Record(false));
  EXPECT_FALSE(c.Record(true));
  EXPECT_TRUE(c.Record(true));  // two in a row
  EXPECT_TRUE(c.ok());
  EXPECT_FALSE(c.Record(false));
  EXPECT_FALSE(c.Record(false));
  EXPECT_TRUE(c.Record(false));  // three in a row
  EXPECT_FALSE(c.ok());
}

TEST(ContainerProbeState, WithoutProbesItIsReady) {
  ContainerProbeState s(std::nullopt, std::nullopt, std::nullopt);
  EXPECT_TRUE(s.Ready());
  EXPECT_FALSE(s.Runs(ContainerProbeKind::kReadiness));
}

TEST(ContainerProbeState, ReadinessStartsNotReadyAndFollowsTheProbe) {
  ContainerProbeState s(std::nullopt, ExecProbe(2), std::nullopt);
  EXPECT_FALSE(s.Ready());
  EXPECT_EQ(s.NotReadyWhy().first, probe_reasons::kReadinessFailed);
  EXPECT_FALSE(s.Record(ContainerProbeKind::kReadiness, kFail).ready_changed);
  EXPECT_EQ(s.NotReadyWhy().second, "readiness probe failed: connection refused");
  EXPECT_TRUE(s.Record(ContainerProbeKind::kReadiness, kOk).ready_changed);
  EXPECT_TRUE(s.Ready());
  EXPECT_FALSE(s.Record(ContainerProbeKind::kReadiness, kFail).ready_changed);  // 1 of 2
  EXPECT_TRUE(s.Record(ContainerProbeKind::kReadiness, kFail).ready_changed);
  EXPECT_FALSE(s.Ready());
  EXPECT_FALSE(s.killed());  // readiness never kills
}

TEST(ContainerProbeState, StartupGatesTheOthersAndKillsWhenItNeverPasses) {
  ContainerProbeState s(ExecProbe(2), ExecProbe(), ExecProbe());
  EXPECT_TRUE(s.Runs(ContainerProbeKind::kStartup));
  EXPECT_FALSE(s.Runs(ContainerProbeKind::kReadiness));
  EXPECT_FALSE(s.Runs(ContainerProbeKind::kLiveness));
  EXPECT_EQ(s.NotReadyWhy().first, probe_reasons::kStartupPending);
  // A liveness result arriving now does not count.
  EXPECT_FALSE(s.Record(ContainerProbeKind::kLiveness, kFail).kill);
  EXPECT_FALSE(s.Record(ContainerProbeKind::kStartup, kFail).kill);
  auto change = s.Record(ContainerProbeKind::kStartup, kFail);
  EXPECT_TRUE(change.kill);
  EXPECT_EQ(s.kill_message(), "startup probe failed 2 times: connection refused");
  EXPECT_FALSE(s.Runs(ContainerProbeKind::kStartup));  // over until the restart

  ContainerProbeState passed(ExecProbe(2), ExecProbe(), ExecProbe());
  passed.Record(ContainerProbeKind::kStartup, kOk);
  EXPECT_TRUE(passed.started());
  EXPECT_FALSE(passed.Runs(ContainerProbeKind::kStartup));
  EXPECT_TRUE(passed.Runs(ContainerProbeKind::kReadiness));
  EXPECT_TRUE(passed.Runs(ContainerProbeKind::kLiveness));
  EXPECT_FALSE(passed.Ready());  // readiness still has to pass
}

TEST(ContainerProbeState, LivenessKillsAfterItsFailureThreshold) {
  ContainerProbeState s(std::nullopt, std::nullopt, ExecProbe(3));
  EXPECT_TRUE(s.Ready());
  EXPECT_FALSE(s.Record(ContainerProbeKind::kLiveness, kFail).kill);
  EXPECT_FALSE(s.Record(ContainerProbeKind::kLiveness, kOk).kill);  // the count starts over
  EXPECT_FALSE(s.Record(ContainerProbeKind::kLiveness, kFail).kill);
  EXPECT_FALSE(s.Record(ContainerProbeKind::kLiveness, kFail).kill);
  auto change = s.Record(ContainerProbeKind::kLiveness, {false, "no pong"});
  EXPECT_TRUE(change.kill);
  EXPECT_TRUE(change.ready_changed);
  EXPECT_EQ(s.kill_message(), "liveness probe failed 3 times: no pong");
  EXPECT_EQ(s.NotReadyWhy().first, probe_reasons::kUnhealthy);
}

TEST(IdleTracker, PausesAfterTheThresholdOfUnbrokenIdleReports) {
  IdleTracker t("^idle", 30s);
  const base::MonoTime t0{};
  SandboxProbeReport idle{true, "idle since 12:00", true};
  SandboxProbeReport busy{true, "busy: 2 jobs", true};
  EXPECT_FALSE(t.Observe(idle, t0));
  EXPECT_FALSE(t.Observe(idle, t0 + 29s));
  EXPECT_FALSE(t.Observe(busy, t0 + 31s));  // busy breaks the run
  EXPECT_FALSE(t.Observe(idle, t0 + 40s));
  EXPECT_FALSE(t.Observe(idle, t0 + 69s));
  EXPECT_TRUE(t.Observe(idle, t0 + 70s));
  t.Reset();  // paused: a resumed sandbox starts over
  EXPECT_FALSE(t.Observe(idle, t0 + 71s));
}

TEST(IdleTracker, AFailingProbeIsNeverIdle) {
  IdleTracker any("", 1s);
  const base::MonoTime t0{};
  EXPECT_FALSE(any.Observe({false, "idle", true}, t0));
  EXPECT_FALSE(any.Observe({false, "idle", true}, t0 + 5s));
  EXPECT_FALSE(any.Observe({true, "", false}, t0 + 6s));  // no result yet
  EXPECT_FALSE(any.Observe({true, "anything", true}, t0 + 7s));
  EXPECT_TRUE(any.Observe({true, "anything", true}, t0 + 8s));
}

TEST(TruncateProbeOutput, KeepsWholeCharactersAndDropsTrailingSpace) {
  EXPECT_EQ(TruncateProbeOutput("ok\n"), "ok");
  std::string long_text(kMaxProbeOutput - 1, 'a');
  long_text += "\xC3\xA9tail";  // é straddles the limit
  EXPECT_EQ(TruncateProbeOutput(long_text), std::string(kMaxProbeOutput - 1, 'a'));
}

}  // namespace
}  // namespace warren::node
