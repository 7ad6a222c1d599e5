#pragma once

// The decisions of probing, without side effects (README.md, "Probes"): thresholds, the
// startup → readiness/liveness gate, when a container is killed, and when an idle sandbox is
// paused. The Prober (prober.h) feeds results in and acts on what comes out; these types are
// unit-tested with an injected time and no sandbox.

#include <chrono>
#include <optional>
#include <regex>
#include <string>
#include <string_view>

#include "api/types/probe.h"
#include "base/clock.h"

namespace warren::node {

// Reasons probes write into conditions and Events (Kubernetes' and OpenKruise's spelling).
namespace probe_reasons {
inline constexpr const char* kUnhealthy = "Unhealthy";  // an Event per failing probe, a kill
inline constexpr const char* kReadinessFailed = "ReadinessProbeFailed";  // Ready False
inline constexpr const char* kStartupPending = "StartupProbeNotPassed";  // Ready False
inline constexpr const char* kProbeSucceeded = "ProbeSucceeded";         // sandbox probe
inline constexpr const char* kProbeFailed = "ProbeFailed";               // sandbox probe
inline constexpr const char* kProbesValid = "ProbesValid";               // ProbeValid True
inline constexpr const char* kInvalidProbe = "InvalidProbe";             // ProbeValid False
inline constexpr const char* kAutoPaused = "AutoPaused";                 // SandboxPaused
}  // namespace probe_reasons

// At most this much of a probe's output is kept (condition messages, Events).
inline constexpr size_t kMaxProbeOutput = 1024;

// What one run of a probe found.
struct ProbeOutcome {
  bool success = false;
  std::string output;            // the command's output, the HTTP status line, or why it failed
  std::optional<int> exit_code;  // exec: the command's, when it ended
};

// Trims `output` to kMaxProbeOutput bytes on a UTF-8 boundary, without trailing whitespace.
std::string TruncateProbeOutput(std::string_view output);

// Kubernetes' thresholds over one probe's results: the probe reports success after
// successThreshold successes in a row and failure after failureThreshold failures in a row;
// in between it keeps what it reported. Value type.
class ProbeCounter {
 public:
  ProbeCounter(const api::ProbeTimings& timings, bool initially_ok)
      : success_threshold_(timings.success_threshold),
        failure_threshold_(timings.failure_threshold),
        ok_(initially_ok) {}
  // Records one result; true when the reported state changed.
  bool Record(bool success);
  bool ok() const { return ok_; }
  int consecutive_failures() const { return failures_; }
  // failureThreshold failures in a row (a startup probe that never passed reports no change).
  bool failed() const { return failures_ >= failure_threshold_; }

 private:
  int success_threshold_;
  int failure_threshold_;
  bool ok_;
  int successes_ = 0;
  int failures_ = 0;
};

enum class ContainerProbeKind { kStartup, kReadiness, kLiveness };
std::string_view ContainerProbeName(ContainerProbeKind kind);  // "startup", "readiness", ...

// The container probes of one run of a sandbox's command, as a kubelet keeps them: nothing but
// the startup probe runs until it has succeeded; readiness starts not ready and gates the
// Ready condition; liveness (or startup) failing its threshold asks for a kill, after which
// this state is over (the restarted command gets a fresh one). Value type.
class ContainerProbeState {
 public:
  ContainerProbeState(const std::optional<api::Probe>& startup,
                      const std::optional<api::Probe>& readiness,
                      const std::optional<api::Probe>& liveness);

  // Whether the probe of `kind` exists and runs now (startup until passed, the others after).
  bool Runs(ContainerProbeKind kind) const;

  // What one result changed.
  struct Change {
    bool ready_changed = false;
    bool message_changed = false;  // not ready, and the probe's output changed
    bool kill = false;             // the command must be killed (and restarted under restartPolicy)
  };
  Change Record(ContainerProbeKind kind, const ProbeOutcome& outcome);

  // Ready as probes see it: started, and the readiness probe (if any) passing.
  bool Ready() const;
  // Why not Ready (reason, message with the last output), when Ready() is false.
  std::pair<std::string, std::string> NotReadyWhy() const;
  bool started() const { return started_; }
  bool killed() const { return killed_; }
  // The kill's message ("liveness probe failed 3 times: <output>"), once killed.
  const std::string& kill_message() const { return kill_message_; }

 private:
  bool has_startup_, has_readiness_, has_liveness_;
  ProbeCounter startup_, readiness_, liveness_;
  bool started_;
  bool killed_ = false;
  std::string last_readiness_output_;
  std::string kill_message_;
};

// The state a sandbox probe reports as its condition agents.kruise.io/<name>.
struct SandboxProbeReport {
  bool ok = false;
  std::string message;    // the probe's output, truncated
  bool reported = false;  // false until the first result
};

// One sandbox probe's report under its thresholds: not ok until successThreshold successes,
// then failing after failureThreshold failures in a row; the message is the latest output.
class SandboxProbeState {
 public:
  explicit SandboxProbeState(const api::ProbeTimings& timings) : counter_(timings, false) {}
  // Records one result; true when the report (state or message) changed.
  bool Record(const ProbeOutcome& outcome);
  const SandboxProbeReport& report() const { return report_; }

 private:
  ProbeCounter counter_;
  SandboxProbeReport report_;
};

// When a sandbox probe says it is idle long enough to pause (AutoPausePolicy
// whenProbedIdleState): idle is the probe's condition True and its message matching the
// regex (any message when there is none); the idle time is measured from the first idle
// result with no busy one since, on the monotonic clock. Reset when the sandbox pauses, so a
// resumed sandbox must be seen idle for the whole threshold again. Not thread-safe.
class IdleTracker {
 public:
  // `regex` was validated at admission; an invalid one matches nothing.
  IdleTracker(std::string_view message_regex, std::chrono::nanoseconds threshold);

  // One report of the probe; true when the sandbox should pause now.
  bool Observe(const SandboxProbeReport& report, base::MonoTime now);
  void Reset() { idle_since_.reset(); }
  std::optional<base::MonoTime> idle_since() const { return idle_since_; }
  std::chrono::nanoseconds threshold() const { return threshold_; }

 private:
  std::optional<std::regex> regex_;
  bool any_message_;
  std::chrono::nanoseconds threshold_;
  std::optional<base::MonoTime> idle_since_;
};

}  // namespace warren::node
