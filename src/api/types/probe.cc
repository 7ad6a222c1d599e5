#include "api/types/probe.h"

namespace warren::api {

ProbeTimings ResolvedTimings(const Probe& probe) {
  ProbeTimings t;
  if (probe.initial_delay_seconds) t.initial_delay_seconds = *probe.initial_delay_seconds;
  if (probe.period_seconds) t.period_seconds = *probe.period_seconds;
  if (probe.timeout_seconds) t.timeout_seconds = *probe.timeout_seconds;
  if (probe.success_threshold) t.success_threshold = *probe.success_threshold;
  if (probe.failure_threshold) t.failure_threshold = *probe.failure_threshold;
  return t;
}

std::string SandboxProbeConditionType(std::string_view probe_name) {
  return "agents.kruise.io/" + std::string(probe_name);
}

}  // namespace warren::api
