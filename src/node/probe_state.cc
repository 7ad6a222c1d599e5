#include "node/probe_state.h"

#include <fmt/format.h>

namespace warren::node {
namespace {

api::ProbeTimings TimingsOf(const std::optional<api::Probe>& p) {
  return p ? api::ResolvedTimings(*p) : api::ProbeTimings{};
}

}  // namespace

std::string TruncateProbeOutput(std::string_view output) {
  if (output.size() > kMaxProbeOutput) {
    size_t n = kMaxProbeOutput;
    // Back up over UTF-8 continuation bytes so a character is never cut in two.
    while (n > 0 && (static_cast<unsigned char>(output[n]) & 0xC0) == 0x80) --n;
    output = output.substr(0, n);
  }
  while (!output.empty() && (output.back() == '\n' || output.back() == '\r' ||
                             output.back() == ' ' || output.back() == '\t')) {
    output.remove_suffix(1);
  }
  return std::string(output);
}

bool ProbeCounter::Record(bool success) {
  const bool before = ok_;
  if (success) {
    failures_ = 0;
    if (++successes_ >= success_threshold_) ok_ = true;
  } else {
    successes_ = 0;
    if (++failures_ >= failure_threshold_) ok_ = false;
  }
  return ok_ != before;
}

std::string_view ContainerProbeName(ContainerProbeKind kind) {
  switch (kind) {
    case ContainerProbeKind::kStartup:
      return "startup";
    case ContainerProbeKind::kReadiness:
      return "readiness";
    case ContainerProbeKind::kLiveness:
      return "liveness";
  }
  return "probe";
}

ContainerProbeState::ContainerProbeState(const std::optional<api::Probe>& startup,
                                         const std::optional<api::Probe>& readiness,
                                         const std::optional<api::Probe>& liveness)
    : has_startup_(startup.has_value()),
      has_readiness_(readiness.has_value()),
      has_liveness_(liveness.has_value()),
      startup_(TimingsOf(startup), /*initially_ok=*/false),
      readiness_(TimingsOf(readiness), /*initially_ok=*/false),
      liveness_(TimingsOf(liveness), /*initially_ok=*/true),
      started_(!has_startup_) {}

bool ContainerProbeState::Runs(ContainerProbeKind kind) const {
  if (killed_) return false;
  switch (kind) {
    case ContainerProbeKind::kStartup:
      return has_startup_ && !started_;
    case ContainerProbeKind::kReadiness:
      return has_readiness_ && started_;
    case ContainerProbeKind::kLiveness:
      return has_liveness_ && started_;
  }
  return false;
}

ContainerProbeState::Change ContainerProbeState::Record(ContainerProbeKind kind,
                                                        const ProbeOutcome& outcome) {
  Change change;
  if (!Runs(kind)) return change;  // a result that arrived after its probe stopped counting
  const bool was_ready = Ready();
  switch (kind) {
    case ContainerProbeKind::kStartup:
      startup_.Record(outcome.success);
      if (startup_.ok()) {
        started_ = true;
      } else if (startup_.failed()) {
        killed_ = true;
        kill_message_ = fmt::format("startup probe failed {} times: {}",
                                    startup_.consecutive_failures(), outcome.output);
        change.kill = true;
      }
      break;
    case ContainerProbeKind::kReadiness:
      readiness_.Record(outcome.success);
      // While not ready, what the probe says is Ready's message: a new one is worth a write.
      change.message_changed = !readiness_.ok() && last_readiness_output_ != outcome.output;
      last_readiness_output_ = outcome.output;
      break;
    case ContainerProbeKind::kLiveness:
      if (liveness_.Record(outcome.success) && !liveness_.ok()) {
        killed_ = true;
        kill_message_ = fmt::format("liveness probe failed {} times: {}",
                                    liveness_.consecutive_failures(), outcome.output);
        change.kill = true;
      }
      break;
  }
  change.ready_changed = Ready() != was_ready;
  return change;
}

bool ContainerProbeState::Ready() const {
  if (killed_ || !started_) return false;
  return !has_readiness_ || readiness_.ok();
}

std::pair<std::string, std::string> ContainerProbeState::NotReadyWhy() const {
  if (killed_) return {probe_reasons::kUnhealthy, kill_message_};
  if (!started_) {
    return {probe_reasons::kStartupPending, "the startup probe has not succeeded yet"};
  }
  if (last_readiness_output_.empty()) {
    return {probe_reasons::kReadinessFailed, "the readiness probe has not succeeded yet"};
  }
  return {probe_reasons::kReadinessFailed,
          fmt::format("readiness probe failed: {}", last_readiness_output_)};
}

bool SandboxProbeState::Record(const ProbeOutcome& outcome) {
  const SandboxProbeReport before = report_;
  counter_.Record(outcome.success);
  report_.ok = counter_.ok();
  report_.message = outcome.output;
  report_.reported = true;
  return report_.ok != before.ok || report_.message != before.message || !before.reported;
}

IdleTracker::IdleTracker(std::string_view message_regex, std::chrono::nanoseconds threshold)
    : any_message_(message_regex.empty()), threshold_(threshold) {
  if (!any_message_) {
    try {
      regex_.emplace(std::string(message_regex), std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      regex_.reset();  // matches nothing: never pauses on a pattern it cannot read
    }
  }
}

bool IdleTracker::Observe(const SandboxProbeReport& report, base::MonoTime now) {
  bool idle = report.reported && report.ok;
  if (idle && !any_message_) idle = regex_ && std::regex_search(report.message, *regex_);
  if (!idle) {
    idle_since_.reset();
    return false;
  }
  if (!idle_since_) idle_since_ = now;
  return now - *idle_since_ >= threshold_;
}

}  // namespace warren::node
