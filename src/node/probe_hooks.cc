// NodeAgent's side of probing (README.md, "Probes"): resolving a sandbox's probes when its pid 1
// starts, reading what the Prober decided into the status, and doing what it asked — a kill
// (then reported by HandleExit and restarted under restartPolicy) or an auto-pause (spec.paused
// through the store, as a user's pause, so the gateway's resume on traffic undoes it).

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/probe.h"
#include "base/log.h"
#include "node/node_agent.h"
#include "node/reasons.h"
#include "node/sandbox_object.h"
#include "node/template_resolver.h"

namespace warren::node {
namespace {

auto Log() { return base::Logger("node"); }

// The annotations an idle pause sets (server/e2b/annotations.h kAutoResumeAnnotation and
// kIdlePausedAnnotation, read by the gateway and the E2B resume): traffic resumes the sandbox,
// and the wake leaves its timers as they were.
constexpr char kAutoResumeAnnotation[] = "warren.dev/auto-resume";
constexpr char kIdlePausedAnnotation[] = "warren.dev/idle-paused";
// How Prober::TakePause's message starts (prober.cc), so the running status can drop it.
constexpr std::string_view kAutoPausedPrefix = "auto-paused:";

const api::Container* ContainerNamed(const api::PodSpec& pod, const std::string& name) {
  if (pod.containers.empty()) return nullptr;
  if (name.empty()) return &pod.containers.front();
  for (const api::Container& c : pod.containers) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

void Append(std::string& to, const std::string& what) {
  if (!to.empty()) to += "; ";
  to += what;
}

// The probes a sandbox runs, from its template (the first container's, the one Warren runs)
// and its spec.probes. What cannot run is said in `invalid` (ProbeValid) and left out.
ProbeConfig BuildProbeConfig(const api::Object& obj, const std::optional<ResolvedTemplate>& tmpl) {
  ProbeConfig c;
  const api::PodSpec* pod = tmpl ? &tmpl->pod.spec : nullptr;
  const api::Container* first = pod ? ContainerNamed(*pod, "") : nullptr;
  if (first != nullptr) {
    c.startup = first->startup_probe;
    c.readiness = first->readiness_probe;
    c.liveness = first->liveness_probe;
    const std::pair<ContainerProbeKind, const std::optional<api::Probe>*> container_probes[] = {
        {ContainerProbeKind::kStartup, &c.startup},
        {ContainerProbeKind::kReadiness, &c.readiness},
        {ContainerProbeKind::kLiveness, &c.liveness}};
    for (const auto& [kind, probe] : container_probes) {
      if (!*probe) continue;
      auto action = ResolveProbeAction(**probe, first);
      if (!action.ok()) {
        // Admission checks these; a template changed under a running sandbox could still.
        Log()->warn("container probe cannot run object={} probe={} error=\"{}\"", obj.Key(),
                    ContainerProbeName(kind), action.status().message());
        continue;
      }
      c.entries.push_back({"", kind, *action, api::ResolvedTimings(**probe)});
    }
  }
  auto spec = api::DecodeSpec<api::SandboxProbeSpec>(obj);
  if (!spec.ok()) {
    c.has_sandbox_probes = true;
    c.invalid = spec.status().message();
    return c;
  }
  c.has_sandbox_probes = !spec->probes.empty();
  for (const api::SandboxProbe& p : spec->probes) {
    const api::Container* container = pod ? ContainerNamed(*pod, p.container_name) : nullptr;
    if (container == nullptr) {
      Append(c.invalid, fmt::format("probe {}: the template has no container \"{}\"", p.name,
                                    p.container_name));
      continue;
    }
    auto action = ResolveProbeAction(p.probe, container);
    if (!action.ok()) {
      Append(c.invalid, fmt::format("probe {}: {}", p.name, action.status().message()));
      continue;
    }
    c.entries.push_back({p.name, std::nullopt, *action, api::ResolvedTimings(p.probe)});
  }
  if (spec->auto_pause_policy && spec->auto_pause_policy->pause &&
      spec->auto_pause_policy->pause->when_probed_idle_state) {
    const api::ProbedIdleState& idle = *spec->auto_pause_policy->pause->when_probed_idle_state;
    const bool runs =
        std::any_of(c.entries.begin(), c.entries.end(),
                    [&](const ProbeConfig::Entry& e) { return e.name == idle.probe; });
    if (runs) {
      c.idle = ProbeConfig::Idle{idle.probe, idle.message_regex, idle.threshold_duration.value};
    } else {
      Append(c.invalid,
             fmt::format("autoPausePolicy: probe {} does not run, so nothing pauses", idle.probe));
    }
  }
  return c;
}

}  // namespace

void NodeAgent::TrackProbes(const api::Object& obj, const std::string& id) {
  locals_.With(id, [](Local& l) {
    l.probes_tracked = true;
    l.auto_paused.reset();  // running again: whatever paused it is over
  });
  TemplateOutcome tmpl = ResolveTemplate(store_, obj);
  ProbeConfig config = BuildProbeConfig(obj, tmpl.resolved);
  if (config.entries.empty() && !config.has_sandbox_probes) {
    prober_->Forget(id);
    return;
  }
  prober_->Track(id, obj.Key(), std::move(config));
}

void NodeAgent::EnsureProbing(const api::Object& obj, const std::string& id) {
  bool tracked = false;
  locals_.With(id, [&](const Local& l) { tracked = l.probes_tracked; });
  if (!tracked) {
    TrackProbes(obj, id);
  } else {
    prober_->Continue(id);  // after a thaw; a no-op while it runs
    locals_.With(id, [](Local& l) { l.auto_paused.reset(); });
  }
}

void NodeAgent::ApplyProbeStatus(api::SandboxStatus& st, const std::string& id,
                                 base::WallTime now) {
  // Running again: an auto-pause's explanation is over.
  if (st.message.starts_with(kAutoPausedPrefix)) st.message.clear();
  const ProbeView view = prober_->View(id);
  if (!view.tracked || view.ready) {
    api::SetCondition(st.conditions,
                      {conditions::kReady, "True", reasons::kSandboxReady, "envd answers"}, now);
  } else {
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", view.not_ready_reason, view.not_ready_message},
                      now);
  }
  for (const api::Condition& c : view.conditions) api::SetCondition(st.conditions, c, now);
}

std::optional<NodeAgent::Next> NodeAgent::ActOnProbes(api::Object& obj, const std::string& id) {
  for (const std::string& warning : prober_->TakeWarnings(id)) {
    events_->Warning(obj, probe_reasons::kUnhealthy, warning);
  }
  if (auto kill = prober_->TakeKill(id)) {
    Log()->info("probe kills the sandbox's command id={} object={} why=\"{}\"", id, obj.Key(),
                *kill);
    locals_.With(id, [&](Local& l) {
      l.probe_kill = *kill;
      l.probes_tracked = false;  // a retry after a failed stop probes it afresh
    });
    prober_->Forget(id);
    if (Status s = StopProcesses(id); !s.ok()) {
      Log()->warn("stopping an unhealthy sandbox failed id={} error=\"{}\"", id, s.ToString());
      return Next::kRetry;
    }
    auto info = runtime_->Inspect(id);
    if (!info.ok()) return Next::kRetry;
    return HandleExit(obj, id, *info);
  }
  if (auto why = prober_->TakePause(id)) return AutoPause(obj, id, *why);
  return std::nullopt;
}

NodeAgent::Next NodeAgent::AutoPause(api::Object& obj, const std::string& id,
                                     const std::string& why) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    if (SpecPaused(obj)) return Next::kRetryNow;  // someone paused it meanwhile
    auto spec = api::DecodeSpec<api::SandboxSpec>(obj);
    if (!spec.ok()) return Next::kRetry;
    // The same write as a user's pause (and the gateway's idle pause), so the resume paths
    // (E2B connect, the gateway's resume on traffic) undo it.
    spec->paused = true;
    spec->pause_time.reset();  // paused now; a shutdown timer still ends it
    api::EncodeSpec(*spec, obj);
    obj.metadata.annotations[kAutoResumeAnnotation] = "true";
    obj.metadata.annotations[kIdlePausedAnnotation] = "true";
    auto updated = store_.Update(obj);
    if (updated.ok()) {
      obj = std::move(*updated);
      locals_.With(id, [&](Local& l) { l.auto_paused = why; });
      Log()->info("sandbox auto-paused id={} object={} why=\"{}\"", id, obj.Key(), why);
      events_->Normal(obj, probe_reasons::kAutoPaused, why);
      return Next::kRetryNow;  // the next pass pauses it, the way its pauseStrategy says
    }
    if (updated.status().code() != StatusCode::kAborted) return Next::kRetry;
    auto fresh = store_.Get(api::SandboxKind(), obj.metadata.namespace_, obj.metadata.name);
    if (!fresh.ok() || fresh->metadata.uid != obj.metadata.uid) return Next::kRetry;
    obj = std::move(*fresh);
  }
  return Next::kRetry;
}

void NodeAgent::NoteAutoPaused(api::SandboxStatus& st, const std::string& id, base::WallTime now) {
  std::optional<std::string> why;
  locals_.With(id, [&](const Local& l) { why = l.auto_paused; });
  if (!why) return;
  st.message = *why;
  api::SetCondition(st.conditions,
                    {conditions::kSandboxPaused, "True", probe_reasons::kAutoPaused, *why}, now);
}

std::optional<std::string> NodeAgent::TakeProbeKill(const std::string& id) {
  std::optional<std::string> kill;
  locals_.With(id, [&](Local& l) { kill = std::exchange(l.probe_kill, std::nullopt); });
  return kill;
}

}  // namespace warren::node
