// Container and sandbox probes run by a real node agent against real sandboxes (busybox, the
// real warren-envd): readiness gates Ready, liveness restarts the command and says why, an exec
// probe that overruns leaves no process, and sandbox probes without a policy only report.

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "node_fixture.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

// A busybox Sandbox whose container carries `container_extra` (YAML lines at container level,
// 8 spaces in) and whose spec carries `spec_extra` (YAML lines, 2 spaces in).
std::string ProbedSandbox(const std::string& name, const std::string& script,
                          const std::string& container_extra,
                          const std::string& restart_policy = "Always",
                          const std::string& spec_extra = "") {
  std::ostringstream y;
  y << "apiVersion: agents.kruise.io/v1alpha1\nkind: Sandbox\n"
    << "metadata: {name: " << name << ", namespace: default}\n"
    << "spec:\n"
    << spec_extra << "  template:\n    spec:\n      restartPolicy: " << restart_policy << "\n"
    << "      containers:\n      - name: main\n        image: busybox\n"
    << "        command: [\"/bin/sh\", \"-c\", \"" << script << "\"]\n"
    << "        resources: {limits: {memory: 64Mi}}\n"
    << container_extra;
  return y.str();
}

const api::Condition* ConditionOf(const api::SandboxStatus& st, const std::string& type) {
  return api::FindCondition(st.conditions, type);
}

api::SandboxStatus StatusOfObject(const api::Object& o) {
  auto st = api::DecodeStatus<api::SandboxStatus>(o);
  return st.ok() ? *st : api::SandboxStatus{};
}

int64_t RestartCount(const api::Object& o) {
  const api::Json& st = o.status();
  return st.is_object() ? st.value("restartCount", int64_t{0}) : 0;
}

std::string Cmdline(int pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

class ProbeTest : public NodeTest {
 protected:
  void SetUp() override {
    NodeTest::SetUp();
    if (IsSkipped()) return;
    StartAgent();
  }
};

TEST_F(ProbeTest, ReadinessKeepsASlowServerNotReadyUntilItAnswers) {
  // The server comes up 4 s after the sandbox is running; its readiness probe asks every second.
  Apply(ProbedSandbox("slow",
                      "sleep 4; mkdir -p /www; echo ok > /www/index.html; exec httpd -f -p 8080 "
                      "-h /www",
                      "        ports: [{name: http, containerPort: 8080}]\n"
                      "        readinessProbe: {httpGet: {path: /index.html, port: http}, "
                      "periodSeconds: 1}\n"));
  // Running (envd answers) but not Ready (WaitPhase would wait for Ready too).
  api::Object running = WaitFor(
      "slow", [](const api::Object& o) { return Phase(o) == "Running"; }, "phase Running");
  api::SandboxStatus st = StatusOfObject(running);
  const api::Condition* ready = ConditionOf(st, "Ready");
  ASSERT_NE(ready, nullptr);
  EXPECT_EQ(ready->status, "False");
  EXPECT_EQ(ready->reason, "ReadinessProbeFailed");
  // A failed probe says what it saw.
  api::Object failing = WaitFor(
      "slow",
      [](const api::Object& o) {
        const api::Condition* c = ConditionOf(StatusOfObject(o), "Ready");
        return c && c->message.find("port 8080") != std::string::npos;
      },
      "the readiness failure in Ready's message", 20s);
  EXPECT_EQ(ConditionStatus(failing, "Ready"), "False");
  api::Object answered = WaitFor(
      "slow", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; },
      "Ready once the server answers", 30s);
  EXPECT_EQ(ConditionReason(answered, "Ready"), "SandboxReady");
  EXPECT_EQ(Phase(answered), "Running");
  Delete("slow");
  WaitGone("slow");
}

TEST_F(ProbeTest, AReadySandboxWhoseReadinessFailsIsNotReadyAndSaysWhy) {
  // Ready while /tmp/ready exists (2 s), then not.
  Apply(ProbedSandbox("flaky", "touch /tmp/ready; (sleep 2; rm /tmp/ready) & exec sleep 3600",
                      "        readinessProbe: {exec: {command: [cat, /tmp/ready]}, periodSeconds: "
                      "1, failureThreshold: 2}\n"));
  WaitPhase("flaky", "Running");  // and Ready
  api::Object unready = WaitFor(
      "flaky", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "False"; },
      "Ready False once the file is gone", 20s);
  EXPECT_EQ(ConditionReason(unready, "Ready"), "ReadinessProbeFailed");
  EXPECT_EQ(Phase(unready), "Running");  // readiness never restarts anything
  const std::string event = WaitEvent("flaky", "Unhealthy", 10s);
  EXPECT_NE(event.find("readiness probe failed: cat: can't open '/tmp/ready'"), std::string::npos)
      << event;
  EXPECT_EQ(RestartCount(Get("flaky")), 0);
  Delete("flaky");
  WaitGone("flaky");
}

TEST_F(ProbeTest, TheStartupProbeGatesReadinessWhichThenRunsAtOnce) {
  // Started after 2 s; readiness would pass at once but runs only every 30 s.
  Apply(
      ProbedSandbox("starter", "sleep 2; touch /tmp/started; exec sleep 3600",
                    "        startupProbe: {exec: {command: [cat, /tmp/started]}, periodSeconds: "
                    "1, failureThreshold: 30}\n"
                    "        readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 30}\n"));
  api::Object running = WaitFor(
      "starter", [](const api::Object& o) { return Phase(o) == "Running"; }, "phase Running");
  EXPECT_EQ(ConditionReason(running, "Ready"), "StartupProbeNotPassed");
  // Ready soon after the startup probe passes, not a readiness period later.
  WaitFor(
      "starter", [](const api::Object& o) { return ConditionStatus(o, "Ready") == "True"; },
      "Ready once started", 15s);
  Delete("starter");
  WaitGone("starter");
}

TEST_F(ProbeTest, AFailingLivenessProbeRestartsTheCommandAndSaysWhy) {
  // Healthy for 2 s after each start, then /tmp/healthy goes; the probe fails twice in a row.
  Apply(ProbedSandbox("sick", "touch /tmp/healthy; (sleep 2; rm /tmp/healthy) & exec sleep 3600",
                      "        livenessProbe: {exec: {command: [cat, /tmp/healthy]}, "
                      "periodSeconds: 1, failureThreshold: 2}\n"));
  WaitPhase("sick", "Running");
  api::Object restarted = WaitFor(
      "sick", [](const api::Object& o) { return RestartCount(o) >= 1; }, "a restart", 30s);
  const std::string event = WaitEvent("sick", "Unhealthy", 10s);
  EXPECT_NE(event.find("liveness probe failed 2 times: cat: can't open '/tmp/healthy'"),
            std::string::npos)
      << event;
  EXPECT_NE(event.find("restart 1"), std::string::npos) << event;
  // It runs again (the restarted command made /tmp/healthy anew).
  WaitFor(
      "sick",
      [](const api::Object& o) {
        return Phase(o) == "Running" && ConditionStatus(o, "Ready") == "True";
      },
      "Running and Ready after the restart", 30s);
  Delete("sick");
  WaitGone("sick");
}

TEST_F(ProbeTest, LivenessFailureUnderRestartPolicyNeverEndsTheSandbox) {
  Apply(ProbedSandbox("once", "exec sleep 3600",
                      "        livenessProbe: {tcpSocket: {port: 9}, periodSeconds: 1, "
                      "failureThreshold: 1}\n",
                      "Never"));
  api::Object failed = WaitPhase("once", "Failed", 30s);
  EXPECT_EQ(ConditionReason(failed, "Ready"), "Unhealthy");
  EXPECT_NE(StatusOfObject(failed).message.find("liveness probe failed 1 times: dial port 9"),
            std::string::npos)
      << StatusOfObject(failed).message;
  EXPECT_EQ(RestartCount(failed), 0);
  Delete("once");
  WaitGone("once");
}

TEST_F(ProbeTest, AnExecProbeThatOverrunsLeavesNoProcessBehind) {
  Apply(ProbedSandbox("slowprobe", "exec sleep 3600",
                      "        readinessProbe: {exec: {command: [sh, -c, 'sleep 30 & sleep 31']}, "
                      "timeoutSeconds: 1, periodSeconds: 3600}\n"));  // one run
  api::Object timed_out = WaitFor(
      "slowprobe",
      [](const api::Object& o) {
        const api::Condition* c = ConditionOf(StatusOfObject(o), "Ready");
        return c && c->message.find("timed out after 1s") != std::string::npos;
      },
      "a readiness probe that timed out", 20s);
  EXPECT_EQ(ConditionStatus(timed_out, "Ready"), "False");
  // Give the kill its moment, then no `sleep 3x` of any probe run is left in the sandbox.
  std::this_thread::sleep_for(500ms);
  const std::string id = SandboxId(timed_out);
  for (int pid : SandboxPids(Options(), id)) {
    const std::string cmd = Cmdline(pid);
    EXPECT_TRUE(cmd.find("sleep 30 ") == std::string::npos &&
                cmd.find("sleep 31 ") == std::string::npos)
        << "left behind: pid " << pid << " " << cmd;
  }
  EXPECT_EQ(Phase(timed_out), "Running");
  Delete("slowprobe");
  WaitGone("slowprobe");
}

TEST_F(ProbeTest, SandboxProbesWithoutAPolicyOnlyReport) {
  // The probe fails until /tmp/state exists, then reports its content as the message.
  Apply(ProbedSandbox("report", "sleep 2; echo idle > /tmp/state; exec sleep 3600", "", "Always",
                      "  probes:\n"
                      "  - {name: idle, containerName: main, exec: {command: [cat, /tmp/state]},"
                      " periodSeconds: 1}\n"));
  api::Object failing = WaitFor(
      "report",
      [](const api::Object& o) { return ConditionStatus(o, "agents.kruise.io/idle") == "False"; },
      "the probe's condition False first", 30s);
  EXPECT_EQ(ConditionReason(failing, "agents.kruise.io/idle"), "ProbeFailed");
  EXPECT_EQ(ConditionStatus(failing, "ProbeValid"), "True");
  api::Object idle = WaitFor(
      "report",
      [](const api::Object& o) { return ConditionStatus(o, "agents.kruise.io/idle") == "True"; },
      "the probe's condition True", 30s);
  api::SandboxStatus st = StatusOfObject(idle);
  const api::Condition* c = ConditionOf(st, "agents.kruise.io/idle");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->reason, "ProbeSucceeded");
  EXPECT_EQ(c->message, "idle");
  EXPECT_TRUE(c->last_transition_time.has_value());
  // Idle, but no policy: nothing pauses.
  std::this_thread::sleep_for(3s);
  api::Object later = Get("report");
  EXPECT_EQ(Phase(later), "Running");
  EXPECT_FALSE(later.spec().value("paused", false));
  EXPECT_EQ(ConditionStatus(later, "Ready"), "True");  // sandbox probes never gate Ready
  Delete("report");
  WaitGone("report");
}

TEST_F(ProbeTest, AnAutoPauseOfAStopStrategySandboxEndsItsProcessesAndKeepsItsFiles) {
  // Idle on its first boot; busy on the next, which finds the file the first one wrote (only
  // "idle" counts as idle: a busy boot is not paused again a second later, before the test
  // sees it, as a loaded full run saw).
  Apply(ProbedSandbox("stopper",
                      "if [ -f /tmp/state ]; then echo busy > /tmp/state; else echo idle > "
                      "/tmp/state; fi; exec sleep 3600",
                      "", "Always",
                      "  pauseStrategy: {type: Stop}\n"
                      "  probes:\n"
                      "  - {name: idle, exec: {command: [cat, /tmp/state]}, periodSeconds: 1}\n"
                      "  autoPausePolicy:\n"
                      "    pause: {whenProbedIdleState: {probe: idle, messageRegex: '^idle$', "
                      "thresholdDuration: 1s}}\n"));
  api::Object paused = WaitPhase("stopper", "Paused", 30s);
  EXPECT_TRUE(paused.spec().value("paused", false));
  EXPECT_EQ(ConditionReason(paused, "SandboxPaused"), "AutoPaused");
  EXPECT_EQ(paused.metadata.annotations["warren.dev/auto-resume"], "true");
  const std::string id = SandboxId(paused);
  WaitFor(
      "stopper", [&](const api::Object&) { return SandboxPids(Options(), id).empty(); },
      "its processes ended (the stop pause)", 20s);
  // Resumed as any pause is: it boots again on its files, and its probes start afresh.
  Patch("stopper", R"({"spec":{"paused":false}})");
  api::Object resumed = WaitPhase("stopper", "Running", 30s);
  EXPECT_EQ(ConditionReason(resumed, "SandboxPaused"), "ResumeSucceed");
  api::Object busy = WaitFor(
      "stopper",
      [](const api::Object& o) {
        const api::Condition* c = ConditionOf(StatusOfObject(o), "agents.kruise.io/idle");
        return c && c->message == "busy";
      },
      "the probe reading the kept file", 20s);
  EXPECT_EQ(Phase(busy), "Running");
  Delete("stopper");
  WaitGone("stopper");
}

TEST_F(ProbeTest, ASandboxProbeOfAMissingContainerIsNotValid) {
  // Admission checks inline templates; a templateRef's is the node's to check.
  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxTemplate
metadata: {name: tmpl, namespace: default}
spec:
  template:
    spec:
      containers:
      - {name: main, image: busybox, command: [sleep, "3600"], resources: {limits: {memory: 64Mi}}}
)");
  Apply(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: invalid, namespace: default}
spec:
  templateRef: {name: tmpl}
  probes:
  - {name: idle, containerName: side, exec: {command: ["true"]}}
)");
  api::Object o = WaitFor(
      "invalid", [](const api::Object& x) { return ConditionStatus(x, "ProbeValid") == "False"; },
      "ProbeValid False", 30s);
  EXPECT_EQ(ConditionReason(o, "ProbeValid"), "InvalidProbe");
  EXPECT_NE(ConditionOf(StatusOfObject(o), "ProbeValid")->message.find("no container \"side\""),
            std::string::npos);
  EXPECT_EQ(ConditionStatus(o, "Ready"), "True");
  Delete("invalid");
  WaitGone("invalid");
}

}  // namespace
}  // namespace warren::node::testing
