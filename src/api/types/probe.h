#pragma once

// Kubernetes' corev1.Probe, as containers carry it (startupProbe, readinessProbe, livenessProbe)
// and as a Sandbox names it (spec.probes[], OpenKruise Agents' sandbox probes), and the
// AutoPausePolicy that acts on sandbox probes (reference/openkruise-agents.md §1.11). Timings
// are optional: absent means Kubernetes' default, which ResolvedTimings fills in, so a stored
// template is not rewritten by defaulting (its revision hash stays what the user wrote).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/int_or_string.h"
#include "api/types/common.h"

namespace warren::api {

struct HttpHeader {
  WARREN_API_STRUCT;
  std::string name;
  std::string value;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("value", s.value);
  }
};

struct HttpGetAction {
  WARREN_API_STRUCT;
  std::string path;    // "" = "/"
  IntOrString port;    // a number, or the name of a container port
  std::string host;    // only "", "localhost" or "127.0.0.1": a sandbox has no other address
  std::string scheme;  // HTTP (default); HTTPS is refused
  std::vector<HttpHeader> http_headers;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("path", s.path);
    v("port", s.port);
    v("host", s.host);
    v("scheme", s.scheme);
    v("httpHeaders", s.http_headers);
  }
};

struct TcpSocketAction {
  WARREN_API_STRUCT;
  IntOrString port;
  std::string host;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("port", s.port);
    v("host", s.host);
  }
};

struct Probe {
  WARREN_API_STRUCT;
  std::optional<ExecAction> exec;
  std::optional<HttpGetAction> http_get;
  std::optional<TcpSocketAction> tcp_socket;
  std::optional<int32_t> initial_delay_seconds;
  std::optional<int32_t> period_seconds;
  std::optional<int32_t> timeout_seconds;
  std::optional<int32_t> success_threshold;
  std::optional<int32_t> failure_threshold;
  std::optional<int64_t> termination_grace_period_seconds;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("exec", s.exec);
    v("httpGet", s.http_get);
    v("tcpSocket", s.tcp_socket);
    v("initialDelaySeconds", s.initial_delay_seconds);
    v("periodSeconds", s.period_seconds);
    v("timeoutSeconds", s.timeout_seconds);
    v("successThreshold", s.success_threshold);
    v("failureThreshold", s.failure_threshold);
    v("terminationGracePeriodSeconds", s.termination_grace_period_seconds);
  }
};

// A probe's timings with Kubernetes' defaults applied (initialDelaySeconds 0, periodSeconds 10,
// timeoutSeconds 1, successThreshold 1, failureThreshold 3).
struct ProbeTimings {
  int32_t initial_delay_seconds = 0;
  int32_t period_seconds = 10;
  int32_t timeout_seconds = 1;
  int32_t success_threshold = 1;
  int32_t failure_threshold = 3;
};
ProbeTimings ResolvedTimings(const Probe& probe);

// spec.probes[]: a named probe the node runs on its period; its result is the condition
// agents.kruise.io/<name> (the probe's fields are inline, as in OpenKruise Agents).
struct SandboxProbe {
  WARREN_API_STRUCT;
  std::string name;
  std::string container_name;  // "" = the first container
  Probe probe;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("containerName", s.container_name);
    Probe::Fields(s.probe, v);
  }
};

struct ProbedIdleState {
  WARREN_API_STRUCT;
  std::string probe;          // a spec.probes[].name
  std::string message_regex;  // "" = any message of a successful probe means idle
  Duration threshold_duration;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("probe", s.probe);
    v("messageRegex", s.message_regex);
    v("thresholdDuration", s.threshold_duration);
  }
};

struct ProbedScheduleTime {
  WARREN_API_STRUCT;
  std::string probe;
  std::string time_format;  // unix
  std::optional<Duration> lead_time;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("probe", s.probe);
    v("timeFormat", s.time_format);
    v("leadTime", s.lead_time);
  }
};

struct AutoPauseTrigger {
  WARREN_API_STRUCT;
  std::optional<ProbedIdleState> when_probed_idle_state;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("whenProbedIdleState", s.when_probed_idle_state);
  }
};

struct AutoResumeTrigger {
  WARREN_API_STRUCT;
  std::optional<ProbedScheduleTime> when_probed_schedule_time;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("whenProbedScheduleTime", s.when_probed_schedule_time);
  }
};

struct AutoPausePolicy {
  WARREN_API_STRUCT;
  std::optional<AutoPauseTrigger> pause;
  std::optional<AutoResumeTrigger> resume;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("pause", s.pause);
    v("resume", s.resume);
  }
};

// The probe fields of a Sandbox's spec, decoded on their own (DecodeSpec<SandboxProbeSpec>) so
// the node and admission read them without touching SandboxSpec's other fields.
struct SandboxProbeSpec {
  WARREN_API_STRUCT;
  std::vector<SandboxProbe> probes;
  std::optional<AutoPausePolicy> auto_pause_policy;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("probes", s.probes);
    v("autoPausePolicy", s.auto_pause_policy);
  }
};

// The condition type a sandbox probe reports as: agents.kruise.io/<name>.
std::string SandboxProbeConditionType(std::string_view probe_name);
inline constexpr const char* kProbeValidCondition = "ProbeValid";

}  // namespace warren::api
