// NodeAgent's in-place updates and restarts (node_agent.h; README "In-place update"): a running
// sandbox whose template changed keeps its id, object, token, routes, volumes and address and
// restarts its processes on the new image; a change that does not qualify makes it again.

#include <fmt/format.h>

#include <chrono>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "base/log.h"
#include "base/strings.h"
#include "node/image_step.h"
#include "node/json_fields.h"
#include "node/node_agent.h"
#include "node/probe_runner.h"
#include "node/reasons.h"
#include "node/sandbox_files.h"
#include "node/sandbox_object.h"
#include "node/volume_step.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

auto Log() { return base::Logger("node"); }

// Raw status fields the typed status does not model.
constexpr const char* kFailedUpdateRevision = "failedUpdateRevision";
constexpr const char* kRestartedFor = "restartedFor";

// The change in words, for the condition and the Event.
std::string Describe(const api::PodTemplateSpec& from, const api::PodTemplateSpec& to,
                     const api::TemplateChange& c) {
  std::vector<std::string> parts;
  if (c.image && !from.spec.containers.empty() && !to.spec.containers.empty()) {
    parts.push_back(fmt::format("image {} → {}", from.spec.containers.front().image,
                                to.spec.containers.front().image));
  }
  if (c.resources) parts.push_back("cpu/memory");
  if (c.metadata) parts.push_back("labels/annotations");
  return base::Join(parts, ", ");
}

// spec.persistentContents names "filesystem": what the sandbox wrote stays on top of the new
// image. Otherwise its writable layer goes, as a container's does when Kubernetes restarts it
// on a new image; its volumes (emptyDir included) stay either way.
bool KeepsFilesystem(const api::Object& obj) {
  auto spec = api::DecodeSpec<api::SandboxSpec>(obj);
  if (!spec.ok()) return false;
  for (const std::string& c : spec->persistent_contents) {
    if (c == "filesystem") return true;
  }
  return false;
}

std::string Millis(base::MonoTime since, base::MonoTime now) {
  return fmt::format("{} ms",
                     std::chrono::duration_cast<std::chrono::milliseconds>(now - since).count());
}

}  // namespace

Status NodeAgent::RunUpgradeHook(const std::string& id, const char* name,
                                 const std::optional<api::UpgradeAction>& hook) {
  if (!hook || !hook->exec || hook->exec->command.empty()) return Status::Ok();
  ProbeAction action;
  action.type = ProbeAction::Type::kExec;
  action.command = hook->exec->command;
  action.timeout = std::chrono::seconds(hook->timeout_seconds.value_or(60));
  ProbeTarget target;
  target.envd = EnvdFor(id);
  ProbeOutcome out = RunProbe(action, target);
  if (out.success) {
    Log()->info("upgrade hook ran id={} hook={}", id, name);
    return Status::Ok();
  }
  if (out.exit_code) {
    const std::string said = fmt::format("the command exited with code {}", *out.exit_code);
    return FailedPreconditionError(
        out.output == said ? fmt::format("{} hook failed: {}", name, said)
                           : fmt::format("{} hook failed: the command exited with code {}: {}",
                                         name, *out.exit_code, out.output));
  }
  return FailedPreconditionError(fmt::format("{} hook failed: {}", name, out.output));
}

std::optional<NodeAgent::Next> NodeAgent::UpdateTemplateIfChanged(api::Object& obj,
                                                                  const std::string& id) {
  int64_t checked = -1;
  bool only_timers_moved = false;
  locals_.With(id, [&](const Local& l) {
    checked = l.template_checked_generation;
    only_timers_moved =
        l.template_checked_spec &&
        EqualExceptKeys(*l.template_checked_spec, obj.spec(), {"shutdownTime", "pauseTime"});
  });
  const int64_t generation = obj.metadata.generation;
  if (checked == generation) return std::nullopt;
  auto mark = [&] {
    locals_.With(id, [&](Local& l) {
      l.template_checked_generation = generation;
      l.template_checked_spec = obj.spec();
    });
  };
  // Every claim and timeout moves the generation through spec.shutdownTime / pauseTime; resolving
  // the template again (a read of its SandboxTemplate) for those is work for nothing.
  if (only_timers_moved) {
    mark();
    return std::nullopt;
  }
  TemplateOutcome tmpl = ResolveTemplate(store_, obj);
  if (!tmpl.resolved || tmpl.resolved->pod.spec.containers.empty()) {
    // The sandbox keeps running what it runs; the template's trouble is the next create's.
    Log()->warn("sandbox template unusable, not updating id={} object={} why=\"{}\"", id, obj.Key(),
                tmpl.resolved ? "no containers" : tmpl.failure.message);
    mark();
    return std::nullopt;
  }
  const std::string want = api::PodTemplateHash(tmpl.resolved->pod);
  std::optional<api::PodTemplateSpec> running;
  std::string revision;
  locals_.With(id, [&](Local& l) {
    if (l.revision.empty()) {
      // Made before revisions were recorded: it runs what its object says now.
      l.running_template = tmpl.resolved->pod;
      l.revision = want;
    }
    running = l.running_template;
    revision = l.revision;
  });
  if (want == revision || want == api::StringField(obj.status(), kFailedUpdateRevision)) {
    if (StatusOf(obj).update_revision != revision) {
      Status s = WriteStatus(
          obj, [&](api::SandboxStatus& st, api::Json&) { st.update_revision = revision; });
      if (!s.ok()) return AfterWriteError(s);
    }
    mark();
    return std::nullopt;
  }
  if (!running) {
    return RecreateForUpdate(obj, id, "the template it was made from is not recorded", want);
  }
  api::TemplateChange change = api::ClassifyTemplateChange(*running, tmpl.resolved->pod);
  if (!change.in_place()) return RecreateForUpdate(obj, id, change.not_in_place, want);
  return UpdateInPlace(obj, id, *tmpl.resolved, change, want);
}

std::optional<NodeAgent::Next> NodeAgent::UpdatePausedIfAsked(api::Object& obj,
                                                              const std::string& id) {
  auto trigger = obj.metadata.annotations.find(api::annotations::kUpgradeResumeTrigger);
  if (trigger == obj.metadata.annotations.end() || trigger->second != "true") return std::nullopt;
  int64_t checked = -1;
  std::string revision;
  locals_.With(id, [&](const Local& l) {
    checked = l.template_checked_generation;
    revision = l.revision;
  });
  if (checked == obj.metadata.generation) return std::nullopt;
  TemplateOutcome tmpl = ResolveTemplate(store_, obj);
  if (!tmpl.resolved || api::PodTemplateHash(tmpl.resolved->pod) == revision) {
    return std::nullopt;  // the running pass compares (and records) it after the next resume
  }
  // Thawed for the update, frozen again by the pass that follows (spec.paused still says so).
  if (Status s = runtime_->Resume(id); !s.ok()) {
    Log()->warn("thaw for an update failed id={} error=\"{}\"", id, s.ToString());
    return Next::kRetry;
  }
  NoteFrozenOrThawed(id, runtime::SandboxState::kRunning);
  locals_.With(id, [](Local& l) { l.ready = true; });
  std::optional<Next> next = UpdateTemplateIfChanged(obj, id);
  return next && *next == Next::kRetry ? Next::kRetry : Next::kRetryNow;
}

NodeAgent::Next NodeAgent::UpdateInPlace(api::Object& obj, const std::string& id,
                                         const ResolvedTemplate& tmpl,
                                         const api::TemplateChange& change,
                                         const std::string& revision) {
  auto log = Log();
  const base::MonoTime started = clock_.Monotonic();
  std::optional<api::PodTemplateSpec> running;
  locals_.With(id, [&](const Local& l) { running = l.running_template; });
  const std::string what = Describe(*running, tmpl.pod, change);
  const std::string uid = obj.metadata.uid;
  const std::string next_lease = LeaseId(uid) + ".next";
  auto mark = [&] {
    locals_.With(id, [&](Local& l) {
      l.template_checked_generation = obj.metadata.generation;
      l.template_checked_spec = obj.spec();
    });
  };

  if (change.image) {
    Status w = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
      const base::WallTime now = clock_.Now();
      api::SetCondition(st.conditions,
                        {conditions::kInplaceUpdate, "False", reasons::kInplaceUpdating,
                         fmt::format("updating in place to revision {}: {}", revision, what)},
                        now);
      api::SetCondition(st.conditions,
                        {conditions::kReady, "False", reasons::kInplaceUpdating,
                         "the sandbox is being updated in place"},
                        now);
    });
    if (!w.ok()) return AfterWriteError(w);
  }
  // The new image is pinned under a second lease while the old one still runs.
  ImageStepOutcome step = LeaseSandboxImage(store_, *images_, obj,
                                            {.image = tmpl.pod.spec.containers.front().image,
                                             .lease_id = change.image ? next_lease : LeaseId(uid),
                                             .builtin_images_ready = images_ready_.load()});
  if (step.failure) return FailUpdate(obj, id, revision, step.failure->message);
  if (!step.image) return Next::kRetry;  // still being pulled

  PlanInput in;
  std::string network_text;
  if (auto f = FillPlanInput(obj, id, tmpl, *step.image, in, network_text)) {
    return FailUpdate(obj, id, revision, f->message);
  }
  auto mounts = api::VolumeMountsOf(obj);
  if (!mounts.ok()) return FailUpdate(obj, id, revision, mounts.status().message());
  AddPersistentVolumes(obj.metadata.name, tmpl.claims, *mounts, in.pod);
  // Its volumes do not change (a change to them does not qualify): those it has attached.
  auto owner = ReadOwner(PathsFor(id).owner);
  if (!owner.ok()) return FailUpdate(obj, id, revision, owner.status().message());
  for (size_t i = 0; i < owner->volumes.size() && i < owner->volume_dirs.size(); ++i) {
    in.persistent_volumes[api::SplitKey(owner->volumes[i]).second] = owner->volume_dirs[i];
  }
  PlanOutcome planned = PlanSandbox(in);
  if (!planned.plan) {
    if (change.image) (void)images_->ReleaseLease(next_lease);
    return FailUpdate(obj, id, revision, planned.failure.message);
  }
  const SandboxPlan& plan = *planned.plan;

  auto record = [&] {
    OwnerRecord o = *owner;
    o.restart_policy = plan.restart_policy;
    o.has_command = !plan.command.empty();
    o.cpu_millicores = plan.spec.resources.cpu_millicores;
    o.template_json = TemplateJson(tmpl.pod);
    if (Status s = WriteOwner(PathsFor(id).owner, o); !s.ok()) {
      log->warn("owner record failed id={} error=\"{}\"", id, s.ToString());
    }
    locals_.With(id, [&](Local& l) {
      l.restart_policy = plan.restart_policy;
      l.has_command = !plan.command.empty();
      l.cpu_millicores = plan.spec.resources.cpu_millicores;
      l.running_template = tmpl.pod;
      l.revision = revision;
    });
  };
  auto succeed = [&](std::string message) -> Next {
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json& raw) {
      st.update_revision = revision;
      raw.erase(kFailedUpdateRevision);
      if (change.image || change.resources) {
        api::SetCondition(st.conditions,
                          {conditions::kInplaceUpdate, "True", reasons::kInplaceSucceeded, message},
                          clock_.Now());
      }
    });
    if (!s.ok()) return AfterWriteError(s);
    mark();
    metrics_.inplace_update.Record(
        obj.metadata.namespace_, true,
        std::chrono::duration<double>(clock_.Monotonic() - started).count());
    if (change.image || change.resources) events_->Normal(obj, reasons::kUpdatedInPlace, message);
    log->info("sandbox updated in place id={} object={} revision={} change=\"{}\" ms={}", id,
              obj.Key(), revision, what,
              std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Monotonic() - started)
                  .count());
    return Next::kDone;
  };

  if (!change.image) {
    // cpu and memory change on the live cgroup: nothing restarts.
    if (change.resources) {
      if (Status r = runtime_->UpdateResources(id, plan.spec.resources); !r.ok()) {
        return FailUpdate(obj, id, revision, "resizing: " + std::string(r.message()));
      }
    }
    record();
    return succeed(fmt::format("{} changed without a restart", what));
  }

  auto spec = api::DecodeSpec<api::SandboxSpec>(obj);
  const std::optional<api::SandboxLifecycle> lifecycle =
      spec.ok() ? spec->lifecycle : std::optional<api::SandboxLifecycle>();
  if (Status h =
          RunUpgradeHook(id, "preUpgrade", lifecycle ? lifecycle->pre_upgrade : std::nullopt);
      !h.ok()) {
    (void)images_->ReleaseLease(next_lease);
    return FailUpdate(obj, id, revision,
                      std::string(h.message()) + "; the sandbox keeps running its old image");
  }
  if (Status s = StopProcesses(id); !s.ok()) {
    log->warn("stop for an update failed id={} error=\"{}\"", id, s.ToString());
    return Next::kRetry;
  }
  if (Status r = runtime_->Rebase(plan.spec, !KeepsFilesystem(obj)); !r.ok()) {
    (void)images_->ReleaseLease(next_lease);
    // Nothing of the old image was undone: it starts again as it was.
    Next n = StartAndWait(obj, id);
    Next f = FailUpdate(obj, id, revision, "changing the image: " + std::string(r.message()));
    return n == Next::kDone ? f : n;
  }
  if (Status m = images_->MoveLease(next_lease, LeaseId(uid)); !m.ok()) {
    log->error("image lease not moved id={} error=\"{}\"", id, m.ToString());
  }
  record();
  Next n = StartAndWait(obj, id);
  bool ready = false;
  locals_.With(id, [&](const Local& l) { ready = l.ready; });
  if (!ready) {
    FailUpdate(obj, id, revision, "the sandbox did not come back ready on its new image");
    return n;
  }
  if (Status h =
          RunUpgradeHook(id, "postUpgrade", lifecycle ? lifecycle->post_upgrade : std::nullopt);
      !h.ok()) {
    return FailUpdate(obj, id, revision,
                      std::string(h.message()) + "; the sandbox runs its new image");
  }
  return succeed(fmt::format("{} in {}; processes restarted, {}", what,
                             Millis(started, clock_.Monotonic()),
                             KeepsFilesystem(obj) ? "files kept" : "volumes kept"));
}

NodeAgent::Next NodeAgent::FailUpdate(api::Object& obj, const std::string& id,
                                      const std::string& revision, const std::string& why) {
  Log()->warn("in-place update failed id={} object={} revision={} why=\"{}\"", id, obj.Key(),
              revision, why);
  events_->Warning(obj, reasons::kFailedUpdateInPlace, why);
  metrics_.inplace_update.Record(obj.metadata.namespace_, false, 0);
  std::string running;
  bool ready = false;
  locals_.With(id, [&](const Local& l) {
    running = l.revision;
    ready = l.ready;
  });
  const base::WallTime now = clock_.Now();
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json& raw) {
    raw[kFailedUpdateRevision] = revision;
    st.update_revision = running;
    api::SetCondition(st.conditions,
                      {conditions::kInplaceUpdate, "False", reasons::kInplaceFailed, why}, now);
    if (ready) ApplyProbeStatus(st, id, now);
  });
  if (!s.ok()) return AfterWriteError(s);
  locals_.With(id, [&](Local& l) {
    l.template_checked_generation = obj.metadata.generation;
    l.template_checked_spec = obj.spec();
  });
  return Next::kDone;
}

NodeAgent::Next NodeAgent::RecreateForUpdate(api::Object& obj, const std::string& id,
                                             const std::string& why, const std::string& revision) {
  const std::string message = fmt::format(
      "the change does not qualify for an in-place update ({}): the sandbox is made again "
      "from revision {}, with new processes and writable layer",
      why, revision);
  Log()->info("recreating for an update id={} object={} why=\"{}\"", id, obj.Key(), why);
  events_->Normal(obj, reasons::kRecreatedForUpdate, message);
  const base::WallTime now = clock_.Now();
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    api::SetCondition(st.conditions,
                      {conditions::kInplaceUpdate, "False", reasons::kRecreating, message}, now);
    api::SetCondition(
        st.conditions,
        {conditions::kReady, "False", reasons::kRecreating, "the sandbox is being made again"},
        now);
  });
  if (!s.ok()) return AfterWriteError(s);
  CollectFromEnvd(obj.metadata.namespace_, id);
  if (Status d = DestroyLocal(id, obj.metadata.uid, /*keep_files=*/false); !d.ok()) {
    return Next::kRetry;
  }
  // StartAndWait ends the Recreating condition once the new sandbox is ready.
  return Create(obj, id);
}

std::optional<NodeAgent::Next> NodeAgent::RestartIfAsked(api::Object& obj, const std::string& id) {
  auto asked = obj.metadata.annotations.find(api::annotations::kRestartRequestedAt);
  if (asked == obj.metadata.annotations.end() || asked->second.empty()) return std::nullopt;
  const std::string value = asked->second;
  if (api::StringField(obj.status(), kRestartedFor) == value) return std::nullopt;
  Log()->info("restarting on request id={} object={} asked={}", id, obj.Key(), value);
  events_->Normal(obj, reasons::kRestarted,
                  "every process is restarted on request; the files stay");
  Status w = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    api::SetCondition(
        st.conditions,
        {conditions::kReady, "False", reasons::kRestarted, "the sandbox is restarting"},
        clock_.Now());
  });
  if (!w.ok()) return AfterWriteError(w);
  if (Status s = StopProcesses(id); !s.ok()) return Next::kRetry;
  Next n = StartAndWait(obj, id);
  bool ready = false;
  locals_.With(id, [&](const Local& l) { ready = l.ready; });
  if (!ready) return n;
  Status s =
      WriteStatus(obj, [&](api::SandboxStatus&, api::Json& raw) { raw[kRestartedFor] = value; });
  return s.ok() ? n : AfterWriteError(s);
}

}  // namespace warren::node
