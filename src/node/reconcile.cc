// NodeAgent's reconciliation: one pass over one Sandbox object (README.md, "Lifecycle").

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <optional>
#include <thread>

#include "api/inplace_update.h"
#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/scope_guard.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "envd/init_channel.h"
#include "image/safe_fs.h"
#include "node/egress.h"
#include "node/image_step.h"
#include "node/json_fields.h"
#include "node/node_agent.h"
#include "node/reasons.h"
#include "node/sandbox_files.h"
#include "node/sandbox_object.h"
#include "node/template_resolver.h"
#include "node/volume_step.h"
#include "os/cgroup.h"
#include "os/inotify_hub.h"
#include "os/thread_priority.h"
#include "trace/object_context.h"
#include "trace/span.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;
namespace phase = api::sandbox_phase;

auto Log() { return base::Logger("node"); }

// Keeps this reconcile's span (ReconcileKey), named for what it did.
void KeepSpan(std::string_view what) {
  if (trace::Span* span = trace::CurrentSpan()) span->Keep(what);
}

int64_t RawInt(const api::Json& status, const char* key) {
  if (!status.is_object()) return 0;
  auto it = status.find(key);
  return it != status.end() && it->is_number_integer() ? it->get<int64_t>() : 0;
}

bool Terminal(const std::string& p) { return p == phase::kSucceeded || p == phase::kFailed; }

bool LostWithNode(const api::SandboxStatus& st) {
  const api::Condition* ready = api::FindCondition(st.conditions, conditions::kReady);
  return st.phase == phase::kFailed && ready != nullptr && ready->reason == reasons::kNodeLost;
}

// Whether the sandbox was ever Running (its first start writes status.startTime).
bool HasStarted(const api::Object& obj) {
  return obj.status().is_object() && obj.status().contains("startTime");
}

// A paused sandbox's status: phase Paused, SandboxPaused, and not Ready.
void SetPaused(api::SandboxStatus& st, base::WallTime now, bool hibernated = false) {
  st.phase = phase::kPaused;
  api::SetCondition(st.conditions,
                    hibernated
                        ? api::Condition{conditions::kSandboxPaused, "True", reasons::kHibernated,
                                         "the sandbox's processes and memory are on disk; "
                                         "it resumes where it was"}
                        : api::Condition{conditions::kSandboxPaused, "True", reasons::kPaused,
                                         "the sandbox's processes are frozen; memory is "
                                         "kept"},
                    now);
  api::SetCondition(st.conditions,
                    {conditions::kReady, "False", "SandboxPaused", "the sandbox is paused"}, now);
}

std::string Seconds(std::chrono::milliseconds d) {
  return fmt::format("{}s", (d.count() + 999) / 1000);
}

std::string HumanBytes(uint64_t bytes) {
  if (bytes == 0) return "unlimited";
  if (bytes % (uint64_t{1} << 30) == 0) return fmt::format("{}Gi", bytes >> 30);
  if (bytes % (uint64_t{1} << 20) == 0) return fmt::format("{}Mi", bytes >> 20);
  return fmt::format("{} bytes", bytes);
}

// The failure of a runtime call during creation: bad input ends the sandbox, the rest is
// retried.
Failure RuntimeFailure(const Status& s, const std::string& envd_path) {
  const std::string& m = s.message();
  switch (s.code()) {
    case StatusCode::kInvalidArgument:
      if (m.find("cpu") != std::string::npos || m.find("memory") != std::string::npos ||
          m.find("pids") != std::string::npos || m.find("limit") != std::string::npos) {
        return Failure{reasons::kInvalidResources, m, true};
      }
      return Failure{reasons::kInvalidTemplate, m, true};
    case StatusCode::kNotFound:
      if (m.find(envd_path) != std::string::npos) {
        return Failure{reasons::kEnvdMissing,
                       fmt::format("the warren-envd binary {} is missing on this node (set "
                                   "WARREN_ENVD_PATH): {}",
                                   envd_path, m),
                       true};
      }
      return Failure{reasons::kCreateFailed, m, true};
    case StatusCode::kFailedPrecondition:
      return Failure{reasons::kCreateFailed, m, true};
    default:
      return Failure{reasons::kCreateFailed, m, false};
  }
}

}  // namespace

std::chrono::milliseconds NodeAgent::RetryDelay(const std::string& key) {
  int n;
  {
    std::lock_guard lock(mu_);
    n = ++retries_[key];
  }
  auto d = options_.retry_base * (int64_t{1} << std::min(n - 1, 20));
  return std::min(d, options_.retry_max);
}

void NodeAgent::ReconcileKey(const std::string& key) {
  auto slash = key.find('/');
  if (slash == std::string::npos) return;
  // The watch's copy when it is fresh enough (WatchedSandboxes), else a read of the store.
  Result<api::Object> obj = InternalError("unread");
  if (auto seen = watched_.Fresh(key)) {
    obj = *seen;
  } else {
    obj = store_.Get(api::SandboxKind(), key.substr(0, slash), key.substr(slash + 1));
  }
  if (!obj.ok()) {
    if (obj.status().code() == StatusCode::kNotFound) {
      CleanupGoneKey(key);
      return;
    }
    Log()->warn("reading sandbox failed object={} error=\"{}\"", key, obj.status().ToString());
    queue_.AddAfter(key, RetryDelay(key));
    return;
  }
  // Sandboxes of an older object under the same name (deleted without our finalizer).
  {
    std::vector<std::pair<std::string, std::string>> stale;
    locals_.ForEachOfKey(key, [&](const Local& l) {
      if (l.uid != obj->metadata.uid) stale.emplace_back(l.id, l.uid);
    });
    for (const auto& [id, uid] : stale) (void)DestroyLocal(id, uid, /*keep_files=*/false);
  }
  // A child of the API request that last changed the object (its trace-context annotation),
  // kept only if this pass did something (KeepSpan): passes that find nothing to do would bury
  // the request's steps under no-ops.
  std::optional<trace::Span> span;
  if (trace::Enabled()) {
    if (auto parent = trace::CarriedContext(*obj)) {
      span.emplace("node.reconcile", *parent);
      span->DropUnlessKept();
      span->SetAttribute("warren.sandbox", key);
    }
  }
  // Refilling a pool yields the CPU to claims and cold creates (the sandbox's own processes
  // run at the normal priority: os::GiveChildNiceOutsideGuard).
  std::optional<os::ScopedThreadNice> background;
  if (IsUnclaimedPoolStock(*obj)) background.emplace(os::kBackgroundNiceIncrement);
  Next next = Reconcile(*obj);
  background.reset();
  watched_.Acted(key, obj->metadata.resource_version);
  switch (next) {
    case Next::kDone: {
      std::lock_guard lock(mu_);
      retries_.erase(key);
      break;
    }
    case Next::kRetry:
      queue_.AddAfter(key, RetryDelay(key));
      break;
    case Next::kRetryNow:
      queue_.Add(key);
      break;
  }
}

void NodeAgent::CleanupGoneKey(const std::string& key) {
  std::vector<std::pair<std::string, std::string>> gone;
  locals_.ForEachOfKey(key, [&](const Local& l) { gone.emplace_back(l.id, l.uid); });
  {
    std::lock_guard lock(mu_);
    retries_.erase(key);
  }
  watched_.Forget(key);
  for (const auto& [id, uid] : gone) {
    Log()->warn("sandbox object vanished without its finalizer; destroying id={} object={}", id,
                key);
    if (Status s = DestroyLocal(id, uid, /*keep_files=*/false); !s.ok()) {
      queue_.AddAfter(key, RetryDelay(key));
    }
    events_->Forget(uid);
  }
}

Status NodeAgent::WriteStatus(api::Object& obj,
                              const std::function<void(api::SandboxStatus&, api::Json& raw)>& fn,
                              bool add_finalizer) {
  const int64_t generation = obj.metadata.generation;
  for (int attempt = 1;; ++attempt) {
    const bool finalize = add_finalizer && obj.AddFinalizer(api::finalizers::kSandbox);
    api::SandboxStatus status = StatusOf(obj);
    const api::Json before = obj.status();
    api::Json raw = before.is_object() ? before : api::Json::object();
    fn(status, raw);
    status.node_name = options_.node_name;
    status.observed_generation = obj.metadata.generation;
    obj.status() = std::move(raw);
    api::EncodeStatus(status, obj);
    if (!finalize && obj.status() == before) return Status::Ok();
    // Only when a status was recorded before: the first one is always written.
    if (!finalize && before.contains("observedGeneration") &&
        EqualExceptKeys(before, obj.status(), {"observedGeneration"})) {
      // A spec change the node has nothing to do for (a claim's timers, a pause time): not
      // worth a write and a round of every watcher; it is recorded with the next real change.
      obj.status() = before;
      return Status::Ok();
    }
    auto written = finalize ? store_.Update(obj, store::Subresource::kMainAndStatus)
                            : store_.UpdateStatus(obj);
    if (written.ok()) {
      obj = std::move(*written);
      return Status::Ok();
    }
    // Controllers change labels and annotations of the same object (claims, recycling): when
    // only that raced us, apply the same change to the fresh object. A new generation means a
    // new spec, which the caller has not acted on: that conflict is theirs to see.
    if (written.status().code() != StatusCode::kAborted || attempt == 3) return written.status();
    // Nor is a sandbox the control plane declared lost with this node (it is being replaced):
    // the next reconcile sees it Failed and only destroys it.
    auto fresh = store_.Get(api::SandboxKind(), obj.metadata.namespace_, obj.metadata.name);
    // Nor one another node took meanwhile (two agents that take unplaced sandboxes raced):
    // writing our name over theirs would run it twice.
    if (!fresh.ok() || fresh->metadata.uid != obj.metadata.uid ||
        fresh->metadata.generation != generation || LostWithNode(StatusOf(*fresh))) {
      return written.status();
    }
    if (const std::string other = StatusOf(*fresh).node_name;
        !other.empty() && other != options_.node_name) {
      return written.status();
    }
    obj = std::move(*fresh);
  }
}

Status NodeAgent::EnsureFinalizer(api::Object& obj) {
  if (obj.HasFinalizer(api::finalizers::kSandbox)) return Status::Ok();
  obj.AddFinalizer(api::finalizers::kSandbox);
  ASSIGN_OR_RETURN(obj, store_.Update(obj));
  return Status::Ok();
}

Status NodeAgent::RemoveFinalizer(api::Object& obj) {
  if (!obj.RemoveFinalizer(api::finalizers::kSandbox)) return Status::Ok();
  auto updated = store_.Update(obj);
  if (!updated.ok() && updated.status().code() != StatusCode::kNotFound) return updated.status();
  // The version that removed it: the watch's copies from before it (still holding the finalizer)
  // are then older than what this agent acted on, so the next pass reads the store, finds the
  // object gone and does not tear the sandbox down a second time.
  if (updated.ok()) obj = std::move(*updated);
  return Status::Ok();
}

NodeAgent::Next NodeAgent::Reconcile(api::Object& obj) {
  auto log = Log();
  const std::string id = SandboxIdOf(obj);
  const api::SandboxStatus status = StatusOf(obj);
  if (!status.node_name.empty() && status.node_name != options_.node_name) return Next::kDone;
  if (status.node_name.empty() && !options_.take_unplaced) return Next::kDone;  // not placed yet
  const bool deleting = obj.metadata.deletion_timestamp.has_value();
  if (id.empty()) {
    if (deleting) return RemoveFinalizer(obj).ok() ? Next::kDone : Next::kRetry;
    return Fail(obj, id,
                Failure{reasons::kMissingSandboxId,
                        fmt::format("the Sandbox has no {} label", api::labels::kSandboxId)});
  }
  // One runtime sandbox per id: another live object may hold this one.
  std::string holder_key, holder_uid;
  locals_.With(id, [&](const Local& l) {
    if (l.uid != obj.metadata.uid) {
      holder_key = l.key;
      holder_uid = l.uid;
    }
  });
  if (!holder_uid.empty()) {
    auto slash = holder_key.find('/');
    auto holder =
        store_.Get(api::SandboxKind(), holder_key.substr(0, slash), holder_key.substr(slash + 1));
    if (holder.ok() && holder->metadata.uid == holder_uid) {
      if (deleting) return RemoveFinalizer(obj).ok() ? Next::kDone : Next::kRetry;
      if (Terminal(status.phase)) return Next::kDone;
      Failure f{
          reasons::kSandboxIdConflict,
          fmt::format("sandbox id {} is already used by Sandbox {} on this node", id, holder_key)};
      // Not ours to touch: report without destroying the holder's sandbox.
      Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
        st.phase = phase::kFailed;
        st.message = f.message;
        api::SetCondition(st.conditions, {conditions::kReady, "False", f.reason, f.message},
                          clock_.Now());
      });
      events_->Warning(obj, f.reason, f.message);
      return s.ok() ? Next::kDone : Next::kRetry;
    }
    if (Status s = DestroyLocal(id, holder_uid, /*keep_files=*/false); !s.ok()) {
      return Next::kRetry;
    }
  }
  if (deleting) return Teardown(obj, id);
  if (Terminal(status.phase)) return EnsureFinished(obj, id);

  auto info = runtime_->Inspect(id);
  if (!info.ok()) {
    if (info.status().code() != StatusCode::kNotFound) return Next::kRetry;
    const bool known = locals_.Contains(id);
    if (known || status.phase == phase::kRunning || status.phase == phase::kPaused ||
        status.phase == phase::kResuming) {
      if (Status s = EnsureFinalizer(obj); !s.ok()) return AfterWriteError(s);
      return Fail(obj, id,
                  Failure{reasons::kSandboxLost,
                          "the sandbox's processes and runtime state are gone (the host "
                          "restarted, or its state was removed); its writable layer and memory "
                          "are lost"});
    }
    // Create writes the finalizer with the Pending status, before anything of it exists.
    return Create(obj, id);
  }
  if (Status s = EnsureFinalizer(obj); !s.ok()) return AfterWriteError(s);
  if (!locals_.With(id, [&](Local& l) { l.state = info->state; })) {
    // The runtime has it but we never took it: not from this object (ids are unique per
    // node); leave it to adoption's rules on the next start rather than guess.
    log->error("runtime sandbox without a record id={} object={}", id, obj.Key());
    return Next::kRetry;
  }
  RunCaptures(id, obj.metadata.uid);
  SyncEgressPolicy(obj, id);
  if (info->state == runtime::SandboxState::kRunning) {
    if (auto reset = TakeReset(id)) return DoReset(obj, id, *reset);
    if (!SpecPaused(obj)) {
      if (auto next = UpdateTemplateIfChanged(obj, id)) return *next;
      if (auto next = RestartIfAsked(obj, id)) return *next;
    }
  }
  if (info->state == runtime::SandboxState::kPaused && SpecPaused(obj)) {
    if (auto next = UpdatePausedIfAsked(obj, id)) return *next;
  }
  switch (info->state) {
    case runtime::SandboxState::kCreated:
      return StartAndWait(obj, id);
    case runtime::SandboxState::kStopped: {
      // Stopped by a hibernate that could not save its processes: a pause keeping the files.
      bool hibernate_failed = false;
      locals_.With(id, [&](const Local& l) { hibernate_failed = l.hibernate_failed.has_value(); });
      if (hibernate_failed) return PausedAfterFailedHibernate(obj, id);
    }
      // Stopped by a pause that keeps files only (stop_pause.cc), not an exit to handle.
      if (status.phase == phase::kPaused) {
        if (SpecPaused(obj)) return ReconcileStoppedPause(obj, id);
        const auto started = clock_.Monotonic();
        return Timed(metrics_.resume, obj, started, ReconcileStoppedPause(obj, id));
      }
      return HandleExit(obj, id, *info);
    case runtime::SandboxState::kRunning:
      return ReconcileRunning(obj, id);
    case runtime::SandboxState::kPaused: {
      if (SpecPaused(obj)) return ReconcilePaused(obj, id);
      const auto started = clock_.Monotonic();
      return Timed(metrics_.resume, obj, started, ReconcilePaused(obj, id));
    }
  }
  return Next::kDone;
}

std::optional<Failure> NodeAgent::FillPlanInput(const api::Object& obj, const std::string& id,
                                                const ResolvedTemplate& tmpl,
                                                const image::ResolvedImage& leased, PlanInput& in,
                                                std::string& network_text) {
  in.sandbox_id = id;
  in.pod = tmpl.pod;
  in.restart_policy = tmpl.restart_policy;
  in.pool_stock = IsUnclaimedPoolStock(obj);
  in.image = leased.image.config;
  in.layers = leased.lower_dirs;
  in.paths = PathsFor(id);
  in.envd_path = envd_path_;
  in.envd_gvisor_path = options_.envd_gvisor_path;
  in.node_secret = secret_->ForSandbox(id);
  in.birth_token = base::RandomHex(32);
  in.user_namespace = options_.user_namespace;
  in.runtime_classes = runtime_->Classes();
  in.defaults = options_.defaults;
  in.capacity = capacity_;
  in.ephemeral_storage_unenforced = storage_->reason();
  in.envd_spans = trace::Enabled();
  if (network_) {
    auto policy = EgressPolicyOf(obj);
    if (!policy.ok()) return Failure{reasons::kInvalidNetwork, policy.status().message()};
    in.resolv_conf = network_->options().resolv_conf_path;
    in.egress_policy = *policy;
    network_text = EgressAnnotationsOf(obj);
  }
  return std::nullopt;
}

NodeAgent::Next NodeAgent::Create(api::Object& obj, const std::string& id) {
  KeepSpan("node.create");
  auto log = Log();
  const base::WallTime now = clock_.Now();
  auto pending = [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kPending;
    if (!api::FindCondition(st.conditions, conditions::kReady)) {
      api::SetCondition(
          st.conditions,
          {conditions::kReady, "False", reasons::kCreating, "the sandbox is being made"}, now);
    }
  };
  Status s = WriteStatus(obj, pending, /*add_finalizer=*/true);
  if (!s.ok()) return AfterWriteError(s);

  TemplateOutcome tmpl = ResolveTemplate(store_, obj);
  if (!tmpl.resolved) return Fail(obj, id, tmpl.failure);
  const api::PodSpec& pod = tmpl.resolved->pod.spec;
  if (pod.containers.empty()) {
    return Fail(obj, id, Failure{reasons::kInvalidTemplate, "the template has no containers"});
  }
  ImageStepOutcome step = LeaseSandboxImage(store_, *images_, obj,
                                            {.image = pod.containers.front().image,
                                             .lease_id = LeaseId(obj.metadata.uid),
                                             .builtin_images_ready = images_ready_.load()});
  if (step.failure) return Fail(obj, id, *step.failure);
  if (!step.image) {
    std::lock_guard lock(mu_);
    if (!images_ready_) waiting_for_images_.push_back(obj.Key());
    return Next::kRetry;
  }
  const std::string& image_name = step.image_name;
  const image::ResolvedImage& leased = *step.image;

  SandboxPaths paths = PathsFor(id);
  PlanInput in;
  std::string network_text;
  if (auto f = FillPlanInput(obj, id, *tmpl.resolved, leased, in, network_text)) {
    return Fail(obj, id, *f);
  }
  auto mounts = api::VolumeMountsOf(obj);
  if (!mounts.ok()) {
    return Fail(obj, id, Failure{reasons::kInvalidVolume, mounts.status().message()});
  }
  AddPersistentVolumes(obj.metadata.name, tmpl.resolved->claims, *mounts, in.pod);
  VolumeStepOutcome attached =
      AttachSandboxVolumes(*volumes_, obj, id, tmpl.resolved->claims, in.pod);
  if (attached.failure) return Fail(obj, id, *attached.failure);
  // Until the sandbox is in the local table (whose teardown detaches it), every way out of
  // this pass — a retry, a failure — lets its volumes go.
  base::ScopeGuard detach_on_exit([&] { volumes_->Detach(id); });
  std::vector<std::string> volume_dirs;
  for (const auto& [claim, dir] : attached.dirs) volume_dirs.push_back(dir);
  in.persistent_volumes = std::move(attached.dirs);
  PlanOutcome planned = PlanSandbox(in);
  if (!planned.plan) return Fail(obj, id, planned.failure);
  SandboxPlan& plan = *planned.plan;
  if (std::optional<std::string> pressure = storage_->HostDiskPressure()) {
    // As a kubelet under DiskPressure: nothing new starts until the host has room again.
    log->warn("disk pressure, not creating id={} object={} why=\"{}\"", id, obj.Key(), *pressure);
    events_->Warning(obj, reasons::kDiskPressure, *pressure);
    return Next::kRetry;
  }

  // Our files first (owner.json says whose sandbox this is), then the runtime's. The sandbox
  // directory is where its ephemeral-storage limit lives.
  if (Status d = storage_->MakeSandboxDir(paths.dir, plan.ephemeral_storage_bytes); !d.ok()) {
    log->error("sandbox dir failed id={} error=\"{}\"", id, d.ToString());
    return Next::kRetry;
  }
  OwnerRecord owner{obj.metadata.uid,
                    obj.metadata.namespace_,
                    obj.metadata.name,
                    plan.restart_policy,
                    !plan.command.empty(),
                    plan.spec.resources.cpu_millicores,
                    plan.ephemeral_storage_bytes,
                    attached.keys,
                    volume_dirs,
                    TemplateJson(tmpl.resolved->pod)};
  if (Status w = WriteOwner(paths.owner, owner); !w.ok()) {
    log->error("owner record failed id={} error=\"{}\"", id, w.ToString());
    return Next::kRetry;
  }
  const uint32_t sandbox_root = SandboxRootUid();
  if (auto f = PrepareHostPaths(plan.host_paths, sandbox_root)) return Fail(obj, id, *f);
  if (plan.init_channel) {
    if (Status c = envd::CreateInitChannel(paths.init_dir, sandbox_root); !c.ok()) {
      log->error("init channel failed id={} error=\"{}\"", id, c.ToString());
      return Next::kRetry;
    }
  }
  if (auto f = PrepareMemoryRestore(image_name, paths, plan.spec)) return Fail(obj, id, *f);
  {
    Local l;
    l.id = id;
    l.key = obj.Key();
    l.namespace_ = obj.metadata.namespace_;
    l.name = obj.metadata.name;
    l.uid = obj.metadata.uid;
    l.restart_policy = plan.restart_policy;
    l.has_command = !plan.command.empty();
    l.init_channel = plan.init_channel;
    l.cpu_millicores = plan.spec.resources.cpu_millicores;
    l.disk_limit_bytes = plan.ephemeral_storage_bytes;
    l.network = network_text;
    l.state = runtime::SandboxState::kCreated;
    l.stats = StatsRing(options_.stats_samples);
    l.running_template = tmpl.resolved->pod;
    l.revision = api::PodTemplateHash(tmpl.resolved->pod);
    l.template_checked_generation = obj.metadata.generation;
    l.template_checked_spec = obj.spec();
    locals_.Put(std::move(l));
    detach_on_exit.Dismiss();
  }
  if (Status c = runtime_->Create(plan.spec); !c.ok()) {
    Failure f = RuntimeFailure(c, envd_path_);
    log->warn("runtime create failed id={} object={} error=\"{}\"", id, obj.Key(), c.ToString());
    if (!f.terminal) {
      events_->Warning(obj, f.reason, f.message);
      return Next::kRetry;
    }
    return Fail(obj, id, f);
  }
  log->info(
      "sandbox created id={} object={} image={} cpu={}m memory={} ephemeral_storage={} "
      "userns={}",
      id, obj.Key(), image_name, plan.spec.resources.cpu_millicores,
      plan.spec.resources.memory_bytes, plan.ephemeral_storage_bytes, plan.spec.user_namespace);
  // Started in the same pass: node.start is a child of this pass's node.create.
  trace::Span start("node.start");
  return StartAndWait(obj, id);
}

NodeAgent::Next NodeAgent::StartAndWait(api::Object& obj, const std::string& id) {
  KeepSpan("node.start");  // a pass of its own (created earlier), or Create's child span
  auto log = Log();
  if (Status s = runtime_->Start(id); !s.ok()) {
    log->warn("runtime start failed id={} error=\"{}\"", id, s.ToString());
    if (s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kInvalidArgument ||
        s.code() == StatusCode::kNotFound) {
      return Fail(obj, id, Failure{reasons::kStartError, s.message()});
    }
    return Next::kRetry;
  }
  const base::WallTime started = clock_.Now();
  std::shared_ptr<EnvdClient> envd = EnvdFor(id);
  if (envd) envd->CloseIdle();  // connections to a previous pid 1 are dead
  locals_.With(id, [](Local& l) {
    l.state = runtime::SandboxState::kRunning;
    l.ready = false;
    l.restart_at.reset();
    l.oom_kills_seen.reset();
  });
  switch (WaitReady(id, options_.ready_timeout)) {
    case Readiness::kReady:
      break;
    case Readiness::kStopping:
      return Next::kDone;  // the next agent takes over
    case Readiness::kExited: {
      auto info = runtime_->Inspect(id);
      if (!info.ok()) return Next::kRetry;
      return HandleExit(obj, id, *info);
    }
    case Readiness::kTimeout:
      return Fail(obj, id,
                  Failure{reasons::kEnvdNotReady,
                          fmt::format("warren-envd did not answer GET /health within {}; its "
                                      "log: {}",
                                      Seconds(options_.ready_timeout), EnvdLogTail(id))});
  }
  log->info("sandbox ready id={} object={} ms={}", id, obj.Key(),
            std::chrono::duration_cast<std::chrono::milliseconds>(clock_.Now() - started).count());
  if (auto f = RekeyFailure(id)) return Fail(obj, id, *f);
  const std::optional<Status> init = ReplayInit(obj, id);
  if (init && !init->ok()) return Next::kRetry;
  locals_.With(id, [](Local& l) { l.ready = true; });
  // A pool member gets a sandbox's full CPU share before anyone can claim it (the status
  // write below makes it claimable). Stock made before a restart of this agent too.
  if (IsPoolMember(obj)) {
    if (Status w = runtime_->SetCpuWeight(id, os::kDefaultCpuWeight);
        !w.ok() && w.code() != StatusCode::kUnimplemented) {
      log->warn("cpu weight not restored id={} error=\"{}\"", id, w.ToString());
    }
  }
  TrackProbes(obj, id);  // a fresh run of pid 1: fresh probe state
  const base::WallTime now = clock_.Now();
  const bool first_start = !HasStarted(obj);
  // One write for start and readiness (each status write is a durable commit).
  std::string revision;
  locals_.With(id, [&](const Local& l) { revision = l.revision; });
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json& raw) {
    st.phase = phase::kRunning;
    st.message.clear();
    // The first start records the revision it runs; an update records its own when it ends
    // (inplace_update.cc), but a sandbox made again for one is done here, once it is ready.
    const api::Condition* update = api::FindCondition(st.conditions, conditions::kInplaceUpdate);
    const bool recreated = update != nullptr && update->reason == reasons::kRecreating;
    if (!revision.empty() && (st.update_revision.empty() || recreated)) {
      st.update_revision = revision;
    }
    if (recreated) {
      raw.erase("failedUpdateRevision");
      api::SetCondition(st.conditions,
                        {conditions::kInplaceUpdate, "True", reasons::kRecreated, update->message},
                        clock_.Now());
    }
    raw["startTime"] = base::FormatRfc3339(started);
    if (init) {
      // envd took the stored /init: said in this write rather than a durable one of its own.
      api::SetCondition(st.conditions,
                        {conditions::kRuntimeInitialized, "True", reasons::kInitSucceeded, ""},
                        now);
    }
    ApplyProbeStatus(st, id, now);  // Ready: envd answers, and the probes (if any) say so
    // A boot that resumes a pause keeping the files only: Running and resumed in one write,
    // never Running while the status still says paused.
    if (!SpecPaused(obj) && api::IsConditionTrue(st.conditions, conditions::kSandboxPaused)) {
      api::SetCondition(st.conditions, {conditions::kSandboxPaused, "False", reasons::kResumed, ""},
                        now);
    }
  });
  if (!s.ok()) return AfterWriteError(s);
  if (first_start) {
    // Creation is what the user waited for: from the object's birth (queueing, image pull,
    // start, envd's readiness), on the wall clock the object's timestamp is on.
    const base::WallTime born = obj.metadata.creation_timestamp.value_or(started);
    metrics_.creation.Record(obj.metadata.namespace_, true,
                             std::max(0.0, std::chrono::duration<double>(now - born).count()));
  }
  // Created paused (or paused while starting): pause now.
  if (SpecPaused(obj)) return ReconcileRunning(obj, id);
  return Next::kDone;
}

// The /init body the control plane stored is replayed whenever envd starts afresh (restart,
// or a sandbox made from a claim's template), so the access token and env vars survive.
std::optional<Status> NodeAgent::ReplayInit(api::Object& obj, const std::string& id) {
  auto sealed = options_.secrets->InitRequest(obj);
  std::string body = sealed.value_or("");
  if (sealed.ok() && body.empty()) return std::nullopt;
  if (sealed.ok()) {
    // A body without a token (a SandboxClaim asks for none: the member keeps its pool token)
    // gives back the token sealed on the sandbox, which envd lost when it started afresh.
    auto token = options_.secrets->AccessToken(obj);
    auto json = api::ParseJson(body);
    if (token.ok() && !token->empty() && json.ok() && json->is_object() &&
        !json->contains("accessToken")) {
      (*json)["accessToken"] = *token;
      body = api::DumpJson(*json);
    }
  }
  Status s;
  {
    // envd gets this span's traceparent with the call (EnvdClient::Init), if it is one.
    trace::Span init_span("infra.initRuntime");
    // A body that does not open leaves envd with its birth token: closed, and said so.
    s = !sealed.ok() ? sealed.status() : DeliverInit(id, body, 5s);
    if (!s.ok()) init_span.SetError(s.message());
  }
  if (s.ok()) return s;
  Log()->warn("sandbox init failed object={} id={} step=envd_init error=\"{}\"", obj.Key(), id,
              s.ToString());
  events_->Warning(obj, reasons::kInitFailed,
                   fmt::format("replaying {} to envd failed: {}",
                               api::annotations::kSealedInitRequest, s.message()));
  const base::WallTime now = clock_.Now();
  (void)WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    api::SetCondition(st.conditions,
                      {conditions::kRuntimeInitialized, "False", reasons::kInitFailed, s.message()},
                      now);
  });
  return s;
}

NodeAgent::Readiness NodeAgent::WaitReady(const std::string& id,
                                          std::chrono::milliseconds timeout) {
  const base::MonoTime deadline = clock_.Monotonic() + timeout;
  std::shared_ptr<EnvdClient> envd = EnvdFor(id);
  if (!envd) return Readiness::kExited;
  // envd listens within a few milliseconds of its start, and every one waited past that is the
  // user's. It writes "listening on" to pid 1's log right after it listens, so a write to that
  // file wakes the wait; a dial is tried then, and at a slower pace as a fallback (a log that
  // cannot be watched, a pid 1 that is not envd). Polling every 250 µs instead dialed a dozen
  // times or more per start, each entering the sandbox's network namespace, beside an envd
  // starting on the same cores (bench/e2b_create/README.md).
  std::optional<os::InotifyHub::Watch> log_writes;
  if (log_writes_) {
    if (auto watch = log_writes_->Add(PathsFor(id).envd_log, IN_MODIFY); watch.ok()) {
      log_writes.emplace(std::move(watch).value());
    }
  }
  const bool woken = log_writes.has_value();
  const base::MonoTime fine_until = clock_.Monotonic() + 30ms;
  auto pause = woken ? std::chrono::microseconds(2000) : std::chrono::microseconds(250);
  while (true) {
    if (stopping_) return Readiness::kStopping;
    auto info = runtime_->Inspect(id);
    if (!info.ok() || info->state == runtime::SandboxState::kStopped) return Readiness::kExited;
    if (info->state == runtime::SandboxState::kRunning && envd->Health(1s).ok()) {
      return Readiness::kReady;
    }
    if (clock_.Monotonic() >= deadline) return Readiness::kTimeout;
    if (woken) {
      log_writes->Wait(pause);
    } else {
      std::this_thread::sleep_for(pause);
    }
    if (clock_.Monotonic() >= fine_until) {
      pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(50));
    }
  }
}

// The last line pid 1 wrote (envd logs only warnings and errors there: the reason it failed).
std::string NodeAgent::EnvdLogTail(const std::string& id) const {
  std::string tail(base::TrimSpace(TailOfFile(PathsFor(id).envd_log, 600)));
  if (auto nl = tail.rfind('\n'); nl != std::string::npos) tail = tail.substr(nl + 1);
  std::string out;
  for (char c : tail) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  return out.empty() ? "(pid 1 wrote nothing)" : out;
}

Failure NodeAgent::ClassifyExit(const std::string& id, const runtime::ExitStatus& exit,
                                bool has_command, bool* success) const {
  *success = false;
  const std::string who = has_command ? "the template command" : "pid 1 (warren-envd)";
  if (exit.unknown) {
    return Failure{reasons::kSandboxLost,
                   "pid 1 ended while no node agent watched it (the host or the agent "
                   "restarted); its processes are gone"};
  }
  // The memory cgroup killed something while pid 1 ran; it was the cause only when what ended
  // the sandbox was a SIGKILL (directly, or as the command's 128+9).
  const bool killed = exit.signal == SIGKILL || (has_command && exit.exit_code == 128 + SIGKILL);
  if (exit.oom_killed && (killed || exit.exit_code != 0)) {
    uint64_t limit = 0;
    if (auto st = runtime_->Stats(id); st.ok()) limit = st->memory_limit_bytes;
    return Failure{reasons::kOOMKilled,
                   fmt::format("the sandbox ran out of memory (limit {}) and {} was killed",
                               HumanBytes(limit), who)};
  }
  if (exit.signal != 0) {
    return Failure{reasons::kError,
                   fmt::format("pid 1 (warren-envd) was killed by signal {}", exit.signal)};
  }
  if (has_command && exit.exit_code == 127) {
    return Failure{reasons::kCommandNotFound,
                   fmt::format("the template command could not be found: {}", EnvdLogTail(id))};
  }
  if (has_command && exit.exit_code == 126) {
    return Failure{reasons::kStartError,
                   fmt::format("the template command could not start: {}", EnvdLogTail(id))};
  }
  if (exit.exit_code == 0) {
    *success = true;
    return Failure{reasons::kCompleted, fmt::format("{} exited with code 0", who)};
  }
  if (has_command && exit.exit_code > 128 && exit.exit_code < 128 + 65) {
    return Failure{reasons::kError,
                   fmt::format("{} was killed by signal {}", who, exit.exit_code - 128)};
  }
  std::string msg = fmt::format("{} exited with code {}", who, exit.exit_code);
  if (!has_command) msg += ": " + EnvdLogTail(id);
  return Failure{reasons::kError, msg};
}

NodeAgent::Next NodeAgent::HandleExit(api::Object& obj, const std::string& id,
                                      const runtime::SandboxInfo& info) {
  RestartPolicy policy = RestartPolicy::kNever;
  bool has_command = false;
  std::optional<base::MonoTime> restart_at;
  locals_.With(id, [&](Local& l) {
    policy = l.restart_policy;
    has_command = l.has_command;
    restart_at = l.restart_at;
    l.state = runtime::SandboxState::kStopped;
    l.ready = false;
    l.probes_tracked = false;  // the next run of pid 1 starts its probes afresh
  });
  prober_->Forget(id);
  // Waiting out a restart backoff already counted.
  if (restart_at) {
    const base::MonoTime now = clock_.Monotonic();
    if (now < *restart_at) {
      queue_.AddAfter(
          obj.Key(),
          std::chrono::duration_cast<std::chrono::milliseconds>(*restart_at - now) + 1ms);
      return Next::kDone;
    }
    Log()->info("restarting sandbox id={} object={}", id, obj.Key());
    return StartAndWait(obj, id);
  }
  runtime::ExitStatus exit = info.last_exit.value_or(runtime::ExitStatus{.unknown = true});
  bool success = false;
  Failure f = ClassifyExit(id, exit, has_command, &success);
  if (auto kill = TakeProbeKill(id)) {
    // Killed because a liveness or startup probe failed: that is the reason, not the signal.
    f = Failure{probe_reasons::kUnhealthy, *kill};
    success = false;
  }
  if (exit.oom_killed && f.reason != reasons::kOOMKilled) {
    events_->Warning(obj, reasons::kOOMKilled,
                     "processes in the sandbox were killed by the kernel's OOM killer before it "
                     "ended");
  }
  if (exit.oom_killed) {
    locals_.With(id, [](Local& l) { l.oom_kills_reported = l.oom_kills_seen.value_or(0); });
  }
  const bool restart = !exit.unknown && (policy == RestartPolicy::kAlways ||
                                         (policy == RestartPolicy::kOnFailure && !success));
  const base::WallTime now = clock_.Now();
  Log()->info("sandbox ended id={} object={} reason={} restart={} message=\"{}\"", id, obj.Key(),
              f.reason, restart, f.message);
  if (restart) {
    const int64_t count = RawInt(obj.status(), "restartCount") + 1;
    auto delay = options_.restart_backoff_base * (int64_t{1} << std::min<int64_t>(count - 1, 20));
    delay = std::min(delay, options_.restart_backoff_max);
    const std::string message =
        fmt::format("{}; restarting in {} (restart {})", f.message, Seconds(delay), count);
    if (!success) events_->Warning(obj, f.reason, message);
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json& raw) {
      st.phase = phase::kRunning;
      st.message = message;
      raw["restartCount"] = count;
      api::SetCondition(st.conditions, {conditions::kReady, "False", reasons::kBackOff, message},
                        now);
    });
    if (!s.ok()) return AfterWriteError(s);
    locals_.With(id, [&](Local& l) { l.restart_at = clock_.Monotonic() + delay; });
    queue_.AddAfter(obj.Key(), delay);
    return Next::kDone;
  }
  if (success) {
    if (EnsureFinished(obj, id) != Next::kDone) return Next::kRetry;
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
      st.phase = phase::kSucceeded;
      st.message = f.message;
      api::SetCondition(st.conditions, {conditions::kReady, "False", f.reason, f.message}, now);
    });
    if (!s.ok()) return AfterWriteError(s);
    return Next::kDone;
  }
  return Fail(obj, id, f);
}

NodeAgent::Next NodeAgent::Freeze(api::Object& obj, const std::string& id) {
  if (runtime_->SupportedState(id).hibernate) return Hibernate(obj, id);
  KeepSpan("node.pause");
  prober_->Suspend(id);  // a frozen sandbox cannot answer; Continue after the thaw
  if (Status s = runtime_->Pause(id); !s.ok()) {
    events_->Warning(obj, reasons::kPauseFailed, s.message());
    return Next::kRetry;
  }
  NoteFrozenOrThawed(id, runtime::SandboxState::kPaused);
  Log()->info("sandbox paused id={} object={}", id, obj.Key());
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.message.clear();
    SetPaused(st, clock_.Now());
    NoteAutoPaused(st, id, clock_.Now());
  });
  if (!s.ok()) return AfterWriteError(s);
  return Next::kDone;
}

NodeAgent::Next NodeAgent::Hibernate(api::Object& obj, const std::string& id) {
  KeepSpan("node.hibernate");
  prober_->Suspend(id);
  if (Status h = runtime_->Hibernate(id); !h.ok()) {
    auto info = runtime_->Inspect(id);
    if (!info.ok() || info->state != runtime::SandboxState::kStopped) {
      events_->Warning(obj, reasons::kHibernateFailed, h.message());
      return Next::kRetry;  // still running as it was: tried again
    }
    const std::string message = fmt::format(
        "paused, file system only: its processes could not be written to disk, so they ended "
        "(runsc: {}); its files are kept",
        h.message().find("still has waiters") != std::string::npos
            ? "a TCP socket a process watches with epoll cannot be saved"
            : h.message());
    events_->Warning(obj, reasons::kHibernateFailed, message);
    prober_->Forget(id);
    locals_.With(id, [&](Local& l) {
      l.probes_tracked = false;
      l.hibernate_failed = message;
    });
    NoteFrozenOrThawed(id, runtime::SandboxState::kStopped);
    return PausedAfterFailedHibernate(obj, id);
  }
  NoteFrozenOrThawed(id, runtime::SandboxState::kPaused);
  // The connections to envd went with the shim that carried them; the restore brings a new one.
  if (std::shared_ptr<EnvdClient> envd = EnvdFor(id)) envd->CloseIdle();
  Log()->info("sandbox hibernated id={} object={}", id, obj.Key());
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.message.clear();
    SetPaused(st, clock_.Now(), /*hibernated=*/true);
    NoteAutoPaused(st, id, clock_.Now());
  });
  if (!s.ok()) return AfterWriteError(s);
  return Next::kDone;
}

NodeAgent::Next NodeAgent::PausedAfterFailedHibernate(api::Object& obj, const std::string& id) {
  std::optional<std::string> message;
  locals_.With(id, [&](const Local& l) { message = l.hibernate_failed; });
  if (!message) return Next::kRetry;
  const base::WallTime now = clock_.Now();
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kPaused;
    st.message = *message;
    api::SetCondition(st.conditions,
                      {conditions::kSandboxPaused, "True", reasons::kHibernateFailed, *message},
                      now);
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", "SandboxPaused", "the sandbox is paused"}, now);
  });
  // A lost write is tried again by the next pass, which finds the sandbox stopped and still
  // knows why (the exit the checkpoint reported must not read as a crash meanwhile).
  if (!s.ok()) return AfterWriteError(s);
  locals_.With(id, [](Local& l) { l.hibernate_failed.reset(); });
  return Next::kDone;
}

NodeAgent::Next NodeAgent::Timed(obs::OperationMetrics& metrics, const api::Object& obj,
                                 base::MonoTime started, Next next) {
  // kRetryNow is a write conflict: the object moved on, the operation neither won nor failed.
  if (next != Next::kRetryNow) {
    metrics.Record(obj.metadata.namespace_, next == Next::kDone,
                   std::chrono::duration<double>(clock_.Monotonic() - started).count());
  }
  return next;
}

NodeAgent::Next NodeAgent::ReconcileRunning(api::Object& obj, const std::string& id) {
  const base::WallTime now = clock_.Now();
  if (SpecPaused(obj)) {
    const auto started = clock_.Monotonic();
    if (PausesFilesystemOnly(obj)) {
      return Timed(metrics_.pause, obj, started, PauseByStopping(obj, id));
    }
    return Timed(metrics_.pause, obj, started, Freeze(obj, id));
  }
  const api::SandboxStatus status = StatusOf(obj);
  bool ready;
  uint64_t oom_new = 0;
  const bool here = locals_.With(id, [&](Local& l) {
    ready = l.ready;
    if (l.oom_kills_seen && *l.oom_kills_seen > l.oom_kills_reported) {
      oom_new = *l.oom_kills_seen - l.oom_kills_reported;
      l.oom_kills_reported = *l.oom_kills_seen;
    }
  });
  if (!here) return Next::kRetry;
  if (!ready || status.phase != phase::kRunning ||
      !api::IsConditionTrue(status.conditions, conditions::kReady)) {
    // After adoption, a resume interrupted by a restart, or a crash while starting.
    switch (WaitReady(id, options_.ready_timeout)) {
      case Readiness::kReady:
        break;
      case Readiness::kStopping:
        return Next::kDone;
      case Readiness::kExited: {
        auto info = runtime_->Inspect(id);
        return info.ok() ? HandleExit(obj, id, *info) : Next::kRetry;
      }
      case Readiness::kTimeout:
        return Fail(obj, id,
                    Failure{reasons::kEnvdNotReady,
                            fmt::format("warren-envd stopped answering GET /health for {}; its "
                                        "log: {}",
                                        Seconds(options_.ready_timeout), EnvdLogTail(id))});
    }
    // A clone adopted between its restore and its re-key.
    if (auto f = RekeyFailure(id)) return Fail(obj, id, *f);
    locals_.With(id, [](Local& l) { l.ready = true; });
  }
  EnsureProbing(obj, id);
  if (auto next = ActOnProbes(obj, id)) return *next;
  if (oom_new > 0) {
    uint64_t limit = 0;
    if (auto st = runtime_->Stats(id); st.ok()) limit = st->memory_limit_bytes;
    const std::string message = fmt::format(
        "{} process{} in the sandbox {} killed by the kernel's OOM killer (memory limit {}); "
        "the sandbox keeps running",
        oom_new, oom_new == 1 ? "" : "es", oom_new == 1 ? "was" : "were", HumanBytes(limit));
    events_->Warning(obj, reasons::kOOMKilled, message);
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
      st.message = message;
      api::SetCondition(st.conditions,
                        {conditions::kOOMKilled, "True", reasons::kOOMKilled, message}, now);
    });
    if (!s.ok()) return AfterWriteError(s);
  }
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kRunning;
    if (st.message.find("restarting in") != std::string::npos) st.message.clear();
    ApplyProbeStatus(st, id, now);
    if (api::IsConditionTrue(st.conditions, conditions::kSandboxPaused)) {
      api::SetCondition(st.conditions, {conditions::kSandboxPaused, "False", reasons::kResumed, ""},
                        now);
    }
  });
  if (!s.ok()) return AfterWriteError(s);
  return Next::kDone;
}

void NodeAgent::NoteFrozenOrThawed(const std::string& id, runtime::SandboxState state) {
  locals_.With(id, [&](Local& l) {
    l.state = state;
    l.ready = false;
  });
}

NodeAgent::Next NodeAgent::ReconcilePaused(api::Object& obj, const std::string& id) {
  const base::WallTime now = clock_.Now();
  if (SpecPaused(obj)) {
    // A hibernated sandbox reads as paused with no process (Runtime::Hibernate).
    auto info = runtime_->Inspect(id);
    const bool hibernated = info.ok() && info->pid == 0;
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
      SetPaused(st, now, hibernated);
      NoteAutoPaused(st, id, now);
    });
    if (!s.ok()) return AfterWriteError(s);
    return Next::kDone;
  }
  if (PausesFilesystemOnly(obj)) return RebootFrozen(obj, id);
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = phase::kResuming;
    api::SetCondition(st.conditions,
                      {conditions::kReady, "False", reasons::kResuming, "thawing the sandbox"},
                      now);
  });
  if (!s.ok()) return AfterWriteError(s);
  if (Status r = runtime_->Resume(id); !r.ok()) {
    events_->Warning(obj, reasons::kResumeFailed, r.message());
    return Next::kRetry;
  }
  NoteFrozenOrThawed(id, runtime::SandboxState::kRunning);
  Log()->info("sandbox resumed id={} object={}", id, obj.Key());
  return ReconcileRunning(obj, id);
}

NodeAgent::Next NodeAgent::Fail(api::Object& obj, const std::string& id, const Failure& f) {
  const base::WallTime now = clock_.Now();
  Log()->warn("sandbox failed object={} id={} reason={} terminal={} message=\"{}\"", obj.Key(), id,
              f.reason, f.terminal, f.message);
  const bool first = [&] {
    // Named: FindCondition points into the status, which must outlive the comparison below.
    const api::SandboxStatus status = StatusOf(obj);
    const api::Condition* c = api::FindCondition(status.conditions, conditions::kReady);
    return !c || c->reason != f.reason || c->message != f.message;
  }();
  // A Failed sandbox holds nothing: what a user sees as Failed is already torn down.
  if (f.terminal && EnsureFinished(obj, id) != Next::kDone) return Next::kRetry;
  const bool creation_failed = f.terminal && !HasStarted(obj) && !Terminal(StatusOf(obj).phase);
  Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
    st.phase = f.terminal ? phase::kFailed : phase::kPending;
    st.message = f.message;
    api::SetCondition(st.conditions, {conditions::kReady, "False", f.reason, f.message}, now);
  });
  if (first || f.terminal) events_->Warning(obj, f.reason, f.message);
  if (!s.ok()) return AfterWriteError(s);
  if (creation_failed) metrics_.creation.Record(obj.metadata.namespace_, false, 0);
  return f.terminal ? Next::kDone : Next::kRetry;
}

// A finished sandbox (Succeeded/Failed) keeps no runtime resources and no image lease; its
// files (the command's log) stay until the object is deleted.
NodeAgent::Next NodeAgent::EnsureFinished(api::Object& obj, const std::string& id) {
  if (id.empty()) return Next::kDone;
  std::string uid;
  locals_.With(id, [&](const Local& l) { uid = l.uid; });
  if (!uid.empty() && uid != obj.metadata.uid) return Next::kDone;  // not ours
  if (!uid.empty()) {
    if (Status s = DestroyLocal(id, uid, /*keep_files=*/true); !s.ok()) return Next::kRetry;
  }
  (void)images_->ReleaseLease(LeaseId(obj.metadata.uid));
  NoteLeaseOfCheckpointReleased(obj);
  return Next::kDone;
}

NodeAgent::Next NodeAgent::Teardown(api::Object& obj, const std::string& id) {
  KeepSpan("node.teardown");
  auto log = Log();
  if (!obj.HasFinalizer(api::finalizers::kSandbox)) return Next::kDone;
  const auto started = clock_.Monotonic();
  const api::SandboxStatus status = StatusOf(obj);
  if (!Terminal(status.phase) && status.phase != phase::kTerminating) {
    Status s = WriteStatus(obj, [&](api::SandboxStatus& st, api::Json&) {
      st.phase = phase::kTerminating;
      api::SetCondition(
          st.conditions,
          {conditions::kReady, "False", reasons::kTerminating, "the sandbox is being destroyed"},
          clock_.Now());
    });
    if (!s.ok() && s.code() == StatusCode::kAborted) return Next::kRetryNow;
  }
  SandboxPaths paths = PathsFor(id);
  auto owner = ReadOwner(paths.owner);
  const bool ours = !owner.ok() || owner->uid == obj.metadata.uid;
  if (ours) {
    if (Status s = DestroyLocal(id, obj.metadata.uid, /*keep_files=*/false); !s.ok()) {
      log->warn("destroy failed id={} error=\"{}\"", id, s.ToString());
      return Next::kRetry;
    }
  }
  (void)images_->ReleaseLease(LeaseId(obj.metadata.uid));
  NoteLeaseOfCheckpointReleased(obj);
  events_->Forget(obj.metadata.uid);
  if (Status s = RemoveFinalizer(obj); !s.ok()) {
    return AfterWriteError(s);
  }
  log->info("sandbox deleted id={} object={}", id, obj.Key());
  metrics_.deletion.Record(obj.metadata.namespace_, true,
                           std::chrono::duration<double>(clock_.Monotonic() - started).count());
  return Next::kDone;
}

void NodeAgent::NoteLeaseOfCheckpointReleased(const api::Object& obj) {
  // The layer a snapshot made is freed once nothing uses it: soon, not at the hourly collection.
  if (obj.metadata.annotations.contains(api::annotations::kRestoreFrom)) gc_soon_ = true;
}

Status NodeAgent::DestroyLocal(const std::string& id, const std::string& uid, bool keep_files) {
  SandboxPaths paths = PathsFor(id);
  auto owner = ReadOwner(paths.owner);
  if (owner.ok() && owner->uid != uid) {
    // The files (and so the runtime sandbox) belong to another object now.
    locals_.Erase(id, uid);
    return Status::Ok();
  }
  std::string namespace_;
  locals_.With(id, [&](const Local& l) { namespace_ = l.namespace_; });
  if (prober_) prober_->Forget(id);
  Status s = runtime_->Destroy(id);
  if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
  // What envd recorded last, before its log directory goes with the files.
  if (!keep_files && !namespace_.empty()) CollectFromEnvd(namespace_, id);
  locals_.Erase(id, uid);
  volumes_->Detach(id);
  (void)images_->ReleaseLease(LeaseId(uid));
  if (!keep_files) {
    if (Status r = storage_->RemoveSandboxDir(paths.dir); !r.ok()) return r;
  }
  return Status::Ok();
}

}  // namespace warren::node
