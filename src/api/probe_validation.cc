#include "api/probe_validation.h"

#include <fmt/format.h>

#include <regex>
#include <set>

#include "api/go_duration.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"

namespace warren::api {
namespace {

using namespace std::chrono_literals;

// A regex longer than this is refused: std::regex backtracks, and the node matches it against
// every result of its probe.
constexpr size_t kMaxMessageRegex = 256;
// Kubernetes allows any timeout; a probe that may run for an hour holds a process that long.
constexpr int32_t kMaxTimeoutSeconds = 3600;

enum class ProbeRole { kStartup, kReadiness, kLiveness, kSandbox };

void CheckAtLeast(const std::optional<int32_t>& v, int32_t min, const std::string& path,
                  FieldErrors& errors) {
  if (v && *v < min) errors.Add(path, fmt::format("Invalid value: {}: must be >= {}", *v, min));
}

void CheckHost(const std::string& host, const std::string& path, FieldErrors& errors) {
  // A sandbox is reached on its own loopback; there is no other address to name.
  if (!host.empty() && host != "localhost" && host != "127.0.0.1") {
    errors.Unsupported(path, host, {"", "localhost", "127.0.0.1"});
  }
}

void CheckPort(const IntOrString& port, const std::set<std::string>* port_names,
               const std::string& path, FieldErrors& errors) {
  if (!port.is_string) {
    if (port.int_value < 1 || port.int_value > 65535) {
      errors.Add(path, fmt::format("Invalid value: {}: must be between 1 and 65535, inclusive",
                                   port.int_value));
    }
    return;
  }
  if (port.str_value.empty()) {
    errors.Required(path);
  } else if (auto err = CheckDns1123Label(port.str_value)) {
    errors.Add(path, *err);
  } else if (port_names != nullptr && !port_names->contains(port.str_value)) {
    errors.Add(
        path, fmt::format("Invalid value: \"{}\": no container port of that name", port.str_value));
  }
}

void ValidateProbe(const Probe& p, ProbeRole role, const std::set<std::string>* port_names,
                   const std::string& path, FieldErrors& errors) {
  const int handlers = (p.exec ? 1 : 0) + (p.http_get ? 1 : 0) + (p.tcp_socket ? 1 : 0);
  if (handlers == 0) {
    errors.Add(path, "must specify a handler type: exec, httpGet or tcpSocket");
  } else if (handlers > 1) {
    errors.Add(path, "may not specify more than 1 handler type");
  }
  if (p.exec && p.exec->command.empty()) {
    errors.Required(ChildPath(ChildPath(path, "exec"), "command"));
  }
  if (p.http_get) {
    const std::string hp = ChildPath(path, "httpGet");
    CheckPort(p.http_get->port, port_names, ChildPath(hp, "port"), errors);
    CheckHost(p.http_get->host, ChildPath(hp, "host"), errors);
    if (!p.http_get->scheme.empty() && p.http_get->scheme != "HTTP") {
      errors.Unsupported(ChildPath(hp, "scheme"), p.http_get->scheme, {"HTTP"});
    }
    if (!p.http_get->path.empty() &&
        (p.http_get->path.front() != '/' ||
         p.http_get->path.find_first_of(" \r\n") != std::string::npos)) {
      errors.Add(ChildPath(hp, "path"),
                 fmt::format("Invalid value: \"{}\": must be an absolute path without spaces",
                             p.http_get->path));
    }
    for (size_t i = 0; i < p.http_get->http_headers.size(); ++i) {
      const HttpHeader& h = p.http_get->http_headers[i];
      const std::string ip = IndexPath(ChildPath(hp, "httpHeaders"), i);
      if (h.name.empty() || h.name.find_first_of(" :\r\n") != std::string::npos) {
        errors.Add(ChildPath(ip, "name"),
                   fmt::format("Invalid value: \"{}\": must be an HTTP header name", h.name));
      }
      if (h.value.find_first_of("\r\n") != std::string::npos) {
        errors.Add(ChildPath(ip, "value"), "Invalid value: must not contain CR or LF");
      }
    }
  }
  if (p.tcp_socket) {
    const std::string tp = ChildPath(path, "tcpSocket");
    CheckPort(p.tcp_socket->port, port_names, ChildPath(tp, "port"), errors);
    CheckHost(p.tcp_socket->host, ChildPath(tp, "host"), errors);
  }
  CheckAtLeast(p.initial_delay_seconds, 0, ChildPath(path, "initialDelaySeconds"), errors);
  CheckAtLeast(p.period_seconds, 1, ChildPath(path, "periodSeconds"), errors);
  CheckAtLeast(p.timeout_seconds, 1, ChildPath(path, "timeoutSeconds"), errors);
  if (p.timeout_seconds && *p.timeout_seconds > kMaxTimeoutSeconds) {
    errors.Add(
        ChildPath(path, "timeoutSeconds"),
        fmt::format("Invalid value: {}: must be <= {}", *p.timeout_seconds, kMaxTimeoutSeconds));
  }
  CheckAtLeast(p.success_threshold, 1, ChildPath(path, "successThreshold"), errors);
  if ((role == ProbeRole::kLiveness || role == ProbeRole::kStartup) && p.success_threshold &&
      *p.success_threshold != 1) {
    errors.Add(ChildPath(path, "successThreshold"),
               fmt::format("Invalid value: {}: must be 1", *p.success_threshold));
  }
  CheckAtLeast(p.failure_threshold, 1, ChildPath(path, "failureThreshold"), errors);
  if (p.termination_grace_period_seconds && *p.termination_grace_period_seconds < 1) {
    errors.Add(ChildPath(path, "terminationGracePeriodSeconds"),
               fmt::format("Invalid value: {}: must be >= 1", *p.termination_grace_period_seconds));
  }
}

std::set<std::string> PortNames(const Container& c) {
  std::set<std::string> names;
  for (const ContainerPort& p : c.ports) {
    if (!p.name.empty()) names.insert(p.name);
  }
  return names;
}

void ValidateAutoPausePolicy(const AutoPausePolicy& policy, const std::set<std::string>& probes,
                             FieldErrors& errors) {
  const std::string path = "spec.autoPausePolicy";
  if (policy.resume && policy.resume->when_probed_schedule_time) {
    // Accepted by OpenKruise Agents; refused rather than silently ignored until Warren acts on
    // it (a paused sandbox's last schedule probe would have to wake it).
    errors.Add(ChildPath(ChildPath(path, "resume"), "whenProbedScheduleTime"),
               "Forbidden: not supported by Warren yet; traffic through the gateway resumes an "
               "auto-paused sandbox");
  }
  if (!policy.pause) return;
  const std::string pp = ChildPath(path, "pause");
  if (!policy.pause->when_probed_idle_state) {
    errors.Required(ChildPath(pp, "whenProbedIdleState"));
    return;
  }
  const ProbedIdleState& idle = *policy.pause->when_probed_idle_state;
  const std::string ip = ChildPath(pp, "whenProbedIdleState");
  if (idle.probe.empty()) {
    errors.Required(ChildPath(ip, "probe"));
  } else if (!probes.contains(idle.probe)) {
    errors.Add(ChildPath(ip, "probe"),
               fmt::format("Not found: \"{}\": no spec.probes entry of that name", idle.probe));
  }
  if (idle.message_regex.size() > kMaxMessageRegex) {
    errors.Add(ChildPath(ip, "messageRegex"),
               fmt::format("Too long: must have at most {} characters", kMaxMessageRegex));
  } else if (!idle.message_regex.empty()) {
    try {
      std::regex re(idle.message_regex, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      errors.Add(ChildPath(ip, "messageRegex"),
                 fmt::format("Invalid value: \"{}\": {}", idle.message_regex, e.what()));
    }
  }
  if (idle.threshold_duration.value < 1s) {
    errors.Add(ChildPath(ip, "thresholdDuration"),
               fmt::format("Invalid value: \"{}\": must be >= 1s",
                           FormatGoDuration(idle.threshold_duration.value)));
  }
}

}  // namespace

void ValidateContainerProbes(const Container& c, std::string_view path, FieldErrors& errors) {
  const std::set<std::string> ports = PortNames(c);
  if (c.startup_probe) {
    ValidateProbe(*c.startup_probe, ProbeRole::kStartup, &ports, ChildPath(path, "startupProbe"),
                  errors);
  }
  if (c.readiness_probe) {
    ValidateProbe(*c.readiness_probe, ProbeRole::kReadiness, &ports,
                  ChildPath(path, "readinessProbe"), errors);
  }
  if (c.liveness_probe) {
    ValidateProbe(*c.liveness_probe, ProbeRole::kLiveness, &ports, ChildPath(path, "livenessProbe"),
                  errors);
  }
}

void ValidateSandboxProbes(const SandboxProbeSpec& spec, const PodSpec* pod, FieldErrors& errors) {
  std::set<std::string> names;
  for (size_t i = 0; i < spec.probes.size(); ++i) {
    const SandboxProbe& p = spec.probes[i];
    const std::string path = IndexPath("spec.probes", i);
    if (p.name.empty()) {
      errors.Required(ChildPath(path, "name"));
    } else if (auto err = CheckDns1123Label(p.name)) {
      // It becomes the condition type agents.kruise.io/<name>.
      errors.Add(ChildPath(path, "name"), *err);
    } else if (!names.insert(p.name).second) {
      errors.Add(ChildPath(path, "name"), fmt::format("Duplicate value: \"{}\"", p.name));
    }
    const Container* container = nullptr;
    if (pod != nullptr && !pod->containers.empty()) {
      if (p.container_name.empty()) {
        container = &pod->containers.front();
      } else {
        for (const Container& c : pod->containers) {
          if (c.name == p.container_name) container = &c;
        }
        if (container == nullptr) {
          errors.Add(ChildPath(path, "containerName"),
                     fmt::format("Not found: \"{}\": no container of that name in spec.template",
                                 p.container_name));
        }
      }
    }
    const std::set<std::string> ports =
        container != nullptr ? PortNames(*container) : std::set<std::string>();
    ValidateProbe(p.probe, ProbeRole::kSandbox, container != nullptr ? &ports : nullptr, path,
                  errors);
  }
  if (spec.auto_pause_policy) ValidateAutoPausePolicy(*spec.auto_pause_policy, names, errors);
}

Status AdmitSandboxProbes(const Object& object) {
  ASSIGN_OR_RETURN(SandboxProbeSpec probes, DecodeSpec<SandboxProbeSpec>(object));
  if (probes.probes.empty() && !probes.auto_pause_policy) return Status::Ok();
  ASSIGN_OR_RETURN(SandboxSpec spec, DecodeSpec<SandboxSpec>(object));
  FieldErrors errors;
  ValidateSandboxProbes(probes, spec.pod_template ? &spec.pod_template->spec : nullptr, errors);
  return errors.ToStatus();
}

}  // namespace warren::api
