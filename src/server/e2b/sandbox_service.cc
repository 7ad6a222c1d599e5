#include "server/e2b/sandbox_service.h"

#include <fmt/format.h>

#include <optional>

#include "api/json.h"
#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/ids.h"
#include "base/log.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "controller/claim/claim_metadata.h"
#include "controller/recycle_controller.h"
#include "server/e2b/annotations.h"
#include "server/e2b/e2b_metrics.h"
#include "server/e2b/envd_init.h"
#include "server/e2b/sandbox_waiter.h"
#include "server/e2b/templates.h"
#include "trace/object_context.h"
#include "trace/span.h"

namespace warren::server::e2b {
namespace {

using api::Json;

constexpr int kMaxWriteAttempts = 8;

std::shared_ptr<spdlog::logger> Log() { return base::Logger("e2b"); }

// E2B accepts "<id>-<clientID>" wherever an id goes and means the id.
std::string_view CanonicalId(std::string_view id) {
  if (auto dash = id.find('-'); dash != std::string_view::npos) return id.substr(0, dash);
  return id;
}

Status NotFound(std::string_view id) {
  return NotFoundError(fmt::format("sandbox \"{}\" not found", id));
}

// Whether `who` may see an object in `ns`.
bool Sees(const auth::Principal& who, std::string_view ns) { return who.admin || who.team == ns; }

// The timer an E2B timeout drives: pauseTime with autoPause, else shutdownTime.
std::optional<base::WallTime>& ActiveTimer(api::SandboxSpec& spec, bool auto_pause) {
  return auto_pause ? spec.pause_time : spec.shutdown_time;
}

// Whether the node agent reports envd initialised with the stored /init body.
bool RuntimeInitialized(const api::Object& o) {
  auto status = api::DecodeStatus<api::SandboxStatus>(o);
  return status.ok() && api::IsConditionTrue(status->conditions, "RuntimeInitialized");
}

// The kind of pause, leaving the rest of the strategy (its idle time) as it is: memory kept is
// the default freeze (no type), files only is Stop.
void SetPauseKeepsMemory(api::SandboxSpec& spec, bool keep_memory) {
  if (keep_memory) {
    if (spec.pause_strategy) spec.pause_strategy->type.clear();
    return;
  }
  if (!spec.pause_strategy) spec.pause_strategy = api::PauseStrategy{};
  spec.pause_strategy->type = "Stop";
}

Result<bool> ReadyCheck(const api::Object& o) {
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  if (r.state == E2bState::kDead) {
    return InternalError(fmt::format("sandbox {} failed: {}", r.sandbox_id,
                                     r.message.empty() ? r.phase : r.message));
  }
  if (r.state == E2bState::kDeleting) {
    return NotFoundError(fmt::format("sandbox {} is being deleted", r.sandbox_id));
  }
  return r.phase == api::sandbox_phase::kRunning && r.ready;
}

}  // namespace

SandboxService::SandboxService(store::Store& store, const api::SandboxSecrets& secrets,
                               NodeAccess* node, RouteNotifier* routes, base::Clock& clock,
                               E2bOptions options)
    : store_(store),
      secrets_(secrets),
      node_(node),
      routes_(routes),
      clock_(clock),
      options_(std::move(options)) {}

Result<SandboxRecord> SandboxService::RecordWithToken(const api::Object& sandbox) const {
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(sandbox));
  ASSIGN_OR_RETURN(r.access_token, secrets_.AccessToken(sandbox));
  ASSIGN_OR_RETURN(r.traffic_token, secrets_.TrafficToken(sandbox));
  return r;
}

SandboxService::~SandboxService() = default;

base::WallTime SandboxService::EndFromNow(int64_t seconds) const {
  // Timers are whole seconds on the object; round up so a sandbox never ends early.
  base::WallTime t = clock_.Now() + std::chrono::seconds(seconds);
  auto whole = std::chrono::time_point_cast<std::chrono::seconds>(t);
  if (whole < t) whole += std::chrono::seconds(1);
  return whole;
}

Result<api::Object> SandboxService::Find(const auth::Principal& who, std::string_view sandbox_id,
                                         bool include_dead) {
  std::string_view id = CanonicalId(sandbox_id);
  if (!base::IsValidSandboxId(id)) return NotFound(sandbox_id);
  std::optional<api::Object> found;
  auto carries_id = [&](const api::Object& o) {
    auto it = o.metadata.labels.find(api::labels::kSandboxId);
    return it != o.metadata.labels.end() && it->second == id;
  };
  if (auto hint = locator_.Hint(id); hint && Sees(who, hint->first)) {
    auto got = store_.Get(api::SandboxKind(), hint->first, hint->second);
    if (got.ok() && carries_id(*got)) {
      found = std::move(*got);
    } else if (!got.ok() && got.status().code() != StatusCode::kNotFound) {
      return got.status();
    } else {
      locator_.Forget(id);
    }
  }
  // Sandboxes made by create are named by their id; claimed pool members keep their name.
  if (!found && !who.admin) {
    auto got = store_.Get(api::SandboxKind(), who.team, id);
    if (got.ok()) {
      if (carries_id(*got)) found = std::move(*got);
    } else if (got.status().code() != StatusCode::kNotFound) {
      return got.status();
    }
  }
  if (!found) {
    store::ListOptions options;
    options.namespace_ = who.admin ? "" : who.team;
    ASSIGN_OR_RETURN(options.label_selector,
                     api::LabelSelector::Parse(fmt::format("{}={}", api::labels::kSandboxId, id)));
    ASSIGN_OR_RETURN(auto list, store_.List(api::SandboxKind(), options));
    for (auto& o : list.items) {
      if (Sees(who, o.metadata.namespace_)) {
        locator_.Remember(id, o.metadata.namespace_, o.metadata.name);
        found = std::move(o);
        break;
      }
    }
  }
  if (!found) return NotFound(sandbox_id);
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(*found));
  if (r.pool_member || r.state == E2bState::kDeleting) return NotFound(sandbox_id);
  if (r.state == E2bState::kDead && !include_dead) return NotFound(sandbox_id);
  return std::move(*found);
}

Result<api::Object> SandboxService::Modify(const api::Object& current,
                                           const std::function<Status(api::Object&)>& mutate) {
  api::Object object = current;
  for (int attempt = 0; attempt < kMaxWriteAttempts; ++attempt) {
    RETURN_IF_ERROR(mutate(object));
    // What the node does about this change (a pause, a resume) is traced under this request.
    trace::CarryContext(object);
    auto updated = store_.Update(object);
    if (updated.ok()) return updated;
    if (updated.status().code() != StatusCode::kAborted) return updated.status();
    auto fresh = store_.Get(api::SandboxKind(), current.metadata.namespace_, current.metadata.name);
    if (!fresh.ok()) return fresh.status();
    if (fresh->metadata.uid != current.metadata.uid || fresh->metadata.deletion_timestamp) {
      return NotFoundError(fmt::format("sandbox {} was deleted meanwhile", current.metadata.name));
    }
    object = std::move(*fresh);
  }
  return AbortedError(fmt::format("sandbox {} kept changing; try again", current.metadata.name));
}

Result<api::Object> SandboxService::WaitReady(const api::Object& sandbox,
                                              std::chrono::milliseconds timeout,
                                              const std::function<bool()>& abandoned) {
  return WaitForSandbox(store_, sandbox.metadata.namespace_, sandbox.metadata.name, ReadyCheck,
                        timeout, "Running and Ready", abandoned);
}

Status SandboxService::InitEnvd(const api::Object& sandbox) {
  if (node_ == nullptr) return Status::Ok();
  ASSIGN_OR_RETURN(std::string body, secrets_.InitRequest(sandbox));
  if (body.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(SandboxRecord r, RecordWithToken(sandbox));
  return SendInit(*node_, r.sandbox_id, body, r.access_token, options_.init_timeout);
}

void SandboxService::Discard(const api::Object& sandbox, std::string_view step, const Status& why) {
  Log()->warn("sandbox discarded name={}/{} step={} error={}", sandbox.metadata.namespace_,
              sandbox.metadata.name, step, why.ToString());
  store::DeleteOptions options;
  options.preconditions.uid = sandbox.metadata.uid;
  auto deleted = store_.Delete(api::SandboxKind(), sandbox.metadata.namespace_,
                               sandbox.metadata.name, options);
  if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) {
    Log()->error("discarding sandbox failed name={}/{} error={}", sandbox.metadata.namespace_,
                 sandbox.metadata.name, deleted.status().ToString());
  }
}

Result<SandboxRecord> SandboxService::Create(const auth::Principal& who,
                                             const CreateRequest& request,
                                             const std::function<bool()>& abandoned) {
  const std::string& ns = who.team;
  ASSIGN_OR_RETURN(ResolvedTemplate tpl,
                   ResolveTemplate(store_, ns, request.template_id, options_.shared_namespace));
  // A pool serves every create: a claimed member gets its traffic token and Host mask in the
  // claim's own write (its route was closed until then), and its network policy before the
  // create answers (CreateFromPool), so no code of the caller runs without them.
  // A running member cannot gain mounts: a create with volumes makes its own sandbox.
  auto located = [&](Result<SandboxRecord> r) {
    if (r.ok()) locator_.Remember(r->sandbox_id, r->namespace_, r->name);
    return r;
  };
  if (tpl.kind == ResolvedTemplate::Kind::kSandboxSet && claimer_ != nullptr &&
      (who.admin || tpl.namespace_ == ns) && request.volume_mounts.empty()) {
    return located(CreateFromPool(who, request, tpl));
  }
  RETURN_IF_ERROR(CheckVolumes(ns, request));
  return located(CreateFrom(who, request, tpl, abandoned));
}

Status SandboxService::CheckVolumes(const std::string& ns, const CreateRequest& request) {
  for (const api::VolumeMountRequest& m : request.volume_mounts) {
    auto v = store_.Get(api::VolumeKind(), ns, m.name);
    if (!v.ok()) {
      if (v.status().code() == StatusCode::kNotFound) {
        return InvalidArgumentError(fmt::format("volume \"{}\" not found", m.name));
      }
      return v.status();
    }
    if (v->metadata.deletion_timestamp) {
      return InvalidArgumentError(fmt::format("volume \"{}\" is being deleted", m.name));
    }
  }
  return Status::Ok();
}

Result<SandboxRecord> SandboxService::CreateFrom(const auth::Principal& who,
                                                 const CreateRequest& request,
                                                 const ResolvedTemplate& tpl,
                                                 const std::function<bool()>& abandoned) {
  const std::string& ns = who.team;
  if (!tpl.restore_from.empty()) RETURN_IF_ERROR(CheckRestorable(ns, tpl.restore_from));
  std::string id = base::NewSandboxId();
  std::string token = request.secure ? base::RandomHex(32) : "";
  base::WallTime now = clock_.Now();

  api::Object o;
  o.api_version = "agents.kruise.io/v1alpha1";
  o.kind = "Sandbox";
  o.metadata.name = id;
  o.metadata.namespace_ = ns;
  auto& labels = o.metadata.labels;
  labels[api::labels::kSandboxId] = id;
  if (tpl.kind == ResolvedTemplate::Kind::kSandboxTemplate) {
    labels[api::labels::kSandboxTemplate] = tpl.name;
  }
  if (request.allow_internet_access) {
    labels[api::labels::kAllowInternetAccess] = *request.allow_internet_access ? "true" : "false";
  }
  auto& ann = o.metadata.annotations;
  ann[api::annotations::kSandboxId] = id;
  ann[api::annotations::kOwner] = who.key_id;
  Json metadata = Json::object();
  for (const auto& [k, v] : request.metadata) metadata[k] = v;
  ann[kMetadataAnnotation] = api::DumpJson(metadata);
  ann[kTemplateIdAnnotation] = request.template_id;
  ann[kStartedAtAnnotation] = base::FormatRfc3339Nanos(now);
  if (request.auto_pause) ann[kAutoPauseAnnotation] = "true";
  if (request.auto_resume) ann[kAutoResumeAnnotation] = "true";
  if (!tpl.restore_from.empty()) ann[api::annotations::kRestoreFrom] = tpl.restore_from;
  if (request.network) {
    ann[api::annotations::kNetwork] = api::DumpJson(sbnet::EgressPolicyToJson(*request.network));
  }
  if (!request.mask_request_host.empty()) {
    ann[kMaskRequestHostAnnotation] = request.mask_request_host;
  }
  if (!request.volume_mounts.empty()) {
    Json mounts = Json::array();
    for (const auto& m : request.volume_mounts)
      mounts.push_back({{"name", m.name}, {"path", m.path}});
    ann[api::annotations::kVolumeMounts] = api::DumpJson(mounts);
  }

  secrets_.SetAccessToken(o, token);
  secrets_.SetInitRequest(o, MakeInitBody(request.env_vars, token, kDefaultUser));
  if (!request.public_traffic) secrets_.SetTrafficToken(o, base::RandomHex(32));
  Json& spec = o.spec();
  for (const auto& [k, v] : tpl.spec_parts.items()) spec[k] = v;
  if (request.inplace_update) {
    // Made with the image and cpu the create asks for (a cold create has nothing to update).
    Json pod_template;
    if (spec.contains("template")) {
      pod_template = spec["template"];
    } else if (spec.contains("templateRef") && spec["templateRef"].is_object()) {
      auto t = store_.Get(api::SandboxTemplateKind(), ns, spec["templateRef"].value("name", ""));
      if (t.ok() && t->spec().is_object() && t->spec().contains("template")) {
        pod_template = t->spec()["template"];
      }
    }
    ASSIGN_OR_RETURN(std::string revision, controller::claim::ApplyInplaceUpdate(
                                               o, pod_template, *request.inplace_update));
    (void)revision;
  }
  if (!request.never_timeout) {
    std::string end = base::FormatRfc3339(EndFromNow(request.timeout_seconds));
    spec[request.auto_pause ? "pauseTime" : "shutdownTime"] = end;
  }
  if (request.auto_pause && !request.auto_pause_memory) spec["pauseStrategy"] = {{"type", "Stop"}};

  // The node agent's work on this object becomes a sibling of this request's steps
  // (node/README.md, "Tracing").
  trace::CarryContext(o);

  std::optional<trace::Span> step(std::in_place, "infra.createSandbox");
  ASSIGN_OR_RETURN(controller::QuotaReservation reservation,
                   controller::QuotaReservation::Take(quota_, o));
  auto created = store_.Create(std::move(o));
  if (!created.ok()) {
    step->SetError(created.status().message());
    // Admission refusing what we built is a bad request (e.g. metadata too large), not a crash.
    return created.status().WithPrefix(
        fmt::format("create sandbox from template \"{}\"", request.template_id));
  }
  reservation.Keep();
  step.reset();
  Log()->info("sandbox created id={} namespace={} template={} owner={}", id, ns,
              request.template_id, who.key_id);
  std::chrono::milliseconds wait = options_.ready_timeout;
  if (request.wait_ready_timeout) wait = *request.wait_ready_timeout;
  step.emplace("infra.waitReady");
  auto ready = WaitReady(*created, wait, abandoned);
  if (!ready.ok()) {
    step->SetError(ready.status().message());
    Discard(*created, "wait_ready", ready.status());
    return ready.status();
  }
  step.reset();
  // The node agent sends the stored /init body itself before it reports Ready, and says so with
  // the RuntimeInitialized condition; only when it has not is envd initialised from here.
  if (!RuntimeInitialized(*ready)) {
    trace::Span init("infra.initRuntime");
    if (Status s = InitEnvd(*ready); !s.ok()) {
      init.SetError(s.message());
      Discard(*ready, "envd_init", s);
      return InternalError(s.message());
    }
  }
  if (routes_ != nullptr) {
    trace::Span sync("proxy.syncRoute");
    routes_->SandboxChanged(*ready);
  }
  if (trace::Span* span = trace::CurrentSpan()) span->SetAttribute("warren.sandbox_id", id);
  return RecordWithToken(*ready);
}

Result<SandboxRecord> SandboxService::CreateFromPool(const auth::Principal& who,
                                                     const CreateRequest& request,
                                                     const ResolvedTemplate& tpl) {
  controller::claim::ClaimRequest claim;
  claim.namespace_ = tpl.namespace_;
  claim.pool = tpl.name;
  claim.owner = who.key_id;
  claim.access_token = request.secure ? base::RandomHex(32) : "";
  claim.env_vars = request.env_vars;
  claim.default_user = kDefaultUser;
  claim.inplace_update = request.inplace_update;
  if (request.allow_internet_access) {
    claim.labels[api::labels::kAllowInternetAccess] =
        *request.allow_internet_access ? "true" : "false";
  }
  Json metadata = Json::object();
  for (const auto& [k, v] : request.metadata) metadata[k] = v;
  claim.annotations[kMetadataAnnotation] = api::DumpJson(metadata);
  claim.annotations[kTemplateIdAnnotation] = request.template_id;
  claim.annotations[kStartedAtAnnotation] = base::FormatRfc3339Nanos(clock_.Now());
  if (request.auto_pause) claim.annotations[kAutoPauseAnnotation] = "true";
  if (request.auto_resume) claim.annotations[kAutoResumeAnnotation] = "true";
  if (!request.public_traffic) claim.traffic_token = base::RandomHex(32);
  if (!request.mask_request_host.empty()) {
    claim.annotations[kMaskRequestHostAnnotation] = request.mask_request_host;
  }
  if (request.network) {
    claim.annotations[api::annotations::kNetwork] =
        api::DumpJson(sbnet::EgressPolicyToJson(*request.network));
  }
  claim.pause_files_only = request.auto_pause && !request.auto_pause_memory;
  if (!request.never_timeout) {
    base::WallTime end = EndFromNow(request.timeout_seconds);
    (request.auto_pause ? claim.pause_time : claim.shutdown_time) = end;
  }
  if (request.create_on_no_stock) claim.create_on_no_stock = *request.create_on_no_stock;
  claim.timeout = options_.ready_timeout;
  if (request.claim_timeout) claim.timeout = *request.claim_timeout;
  claim.wait_ready_timeout = options_.ready_timeout;
  if (request.wait_ready_timeout) claim.wait_ready_timeout = *request.wait_ready_timeout;
  // Kept on the member, so what the node agent does for it is traced under this request.
  if (std::string parent = trace::CurrentTraceparent(); !parent.empty()) {
    claim.annotations[api::annotations::kTraceContext] = std::move(parent);
  }
  OperationRecorder recorded(E2bOperations().claim_creation, tpl.namespace_);
  auto claimed = claimer_->Claim(claim);
  if (!claimed.ok()) {
    return claimed.status().WithPrefix(
        fmt::format("create sandbox from pool \"{}\"", request.template_id));
  }
  if (request.network && node_ != nullptr) {
    // In force before the caller has the id: the member's own processes may have had
    // connections open, and address rules cut those at their next packet too.
    if (Status applied = node_->ApplyNetwork(claimed->sandbox); !applied.ok()) {
      Discard(claimed->sandbox, "network policy", applied);
      return applied.WithPrefix(fmt::format("sandbox from pool \"{}\"", request.template_id));
    }
  }
  ASSIGN_OR_RETURN(SandboxRecord record, RecordFromObject(claimed->sandbox));
  if (trace::Span* span = trace::CurrentSpan()) {
    span->SetAttribute("warren.sandbox_id", record.sandbox_id);
    span->SetAttribute("warren.lock_type", claimed->lock_type);
  }
  record.access_token = claim.access_token;
  record.traffic_token = claim.traffic_token;
  Log()->info("sandbox claimed id={} namespace={} pool={} owner={} lock_type={}", record.sandbox_id,
              tpl.namespace_, tpl.name, who.key_id, claimed->lock_type);
  recorded.Succeeded();
  return record;
}

Result<SandboxRecord> SandboxService::Get(const auth::Principal& who, std::string_view sandbox_id) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  return RecordFromObject(o);
}

Result<ListPage> SandboxService::List(const auth::Principal& who, const ListQuery& query) {
  store::ListOptions options;
  options.namespace_ = who.admin ? "" : who.team;
  ASSIGN_OR_RETURN(options.label_selector, api::LabelSelector::Parse(api::labels::kSandboxId));
  ASSIGN_OR_RETURN(auto list, store_.List(api::SandboxKind(), options));
  std::vector<SandboxRecord> records;
  records.reserve(list.items.size());
  for (const auto& o : list.items) {
    auto r = RecordFromObject(o);
    if (r.ok()) records.push_back(std::move(*r));
  }
  return SelectPage(std::move(records), query);
}

namespace {

// A claimed sandbox of a pool with recycling on (agents.kruise.io/cleanup-enabled on the sandbox;
// the recycler also accepts it on the SandboxSet, which DeleteOrRecycle checks).
bool IsRecyclable(const api::Object& o) {
  auto pool = o.metadata.labels.find(api::labels::kSandboxPool);
  auto claimed = o.metadata.labels.find(api::labels::kSandboxClaimed);
  return pool != o.metadata.labels.end() && claimed != o.metadata.labels.end() &&
         claimed->second == "true";
}

}  // namespace

Status SandboxService::Kill(const auth::Principal& who, std::string_view sandbox_id) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, true));
  OperationRecorder recorded(E2bOperations().delete_, o.metadata.namespace_);
  if (IsRecyclable(o)) {
    recorded.Is(E2bOperations().recycle);
    // A claimed member of a pool that recycles: it is reset and returns to the pool (the new
    // pool token the recycler writes at once cuts the gateway's relays to it).
    auto recycled = controller::RequestRecycle(store_, o);
    if (!recycled.ok()) {
      if (recycled.status().code() == StatusCode::kNotFound) return NotFound(sandbox_id);
      return recycled.status();
    }
    if (*recycled) {
      Log()->info("sandbox killed; recycling it into its pool id={} namespace={}",
                  CanonicalId(sandbox_id), o.metadata.namespace_);
      recorded.Succeeded();
      return Status::Ok();
    }
    recorded.Is(E2bOperations().delete_);  // not recyclable after all: deleted
  }
  if (trace::CurrentSpan() != nullptr) {
    // The node agent's teardown belongs under this request, not under the last one that wrote
    // the object (its create, a pause): one more write, made only for a traced kill. If the
    // object changed meanwhile the kill goes on and the teardown is traced where it was.
    api::Object traced = o;
    trace::CarryContext(traced);
    if (auto updated = store_.Update(std::move(traced)); updated.ok()) o = std::move(*updated);
  }
  store::DeleteOptions options;
  options.preconditions.uid = o.metadata.uid;
  auto deleted = store_.Delete(api::SandboxKind(), o.metadata.namespace_, o.metadata.name, options);
  if (!deleted.ok()) {
    if (deleted.status().code() == StatusCode::kNotFound) return NotFound(sandbox_id);
    return deleted.status();
  }
  std::string id(CanonicalId(sandbox_id));
  if (routes_ != nullptr) {
    routes_->SandboxRemoved(id, o.metadata.uid, deleted->metadata.resource_version);
  }
  Log()->info("sandbox killed id={} namespace={}", id, o.metadata.namespace_);
  recorded.Succeeded();
  return Status::Ok();
}

Status SandboxService::CheckRestorable(const std::string& namespace_,
                                       const std::string& checkpoint) {
  auto cp = store_.Get(api::CheckpointKind(), namespace_, checkpoint);
  if (!cp.ok()) {
    if (cp.status().code() != StatusCode::kNotFound) return cp.status();
  } else if (!cp->metadata.deletion_timestamp) {
    auto st = api::DecodeStatus<api::CheckpointStatus>(*cp);
    if (st.ok() && st->phase == "Succeeded") return Status::Ok();
    return FailedPreconditionError(
        fmt::format("snapshot \"{}\" is not ready (phase {})", checkpoint,
                    st.ok() && !st->phase.empty() ? st->phase : "Pending"));
  }
  return NotFoundError(fmt::format("snapshot \"{}\" not found (deleted?)", checkpoint));
}

Result<std::map<std::string, std::string>> SandboxService::EnvVarsOf(
    const api::Object& sandbox) const {
  std::map<std::string, std::string> out;
  ASSIGN_OR_RETURN(std::string body, secrets_.InitRequest(sandbox));
  if (body.empty()) return out;
  auto doc = api::ParseJson(body);
  if (!doc.ok() || !doc->is_object()) return out;
  if (auto env = doc->find("envVars"); env != doc->end() && env->is_object()) {
    for (const auto& [k, v] : env->items()) {
      if (v.is_string()) out[k] = v.get<std::string>();
    }
  }
  return out;
}

Status SandboxService::Pause(const auth::Principal& who, std::string_view sandbox_id,
                             bool keep_memory) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  OperationRecorder recorded(E2bOperations().pause, o.metadata.namespace_);
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
    if (r.state == E2bState::kPaused) {
      return FailedPreconditionError(fmt::format("sandbox \"{}\" is already paused", sandbox_id));
    }
    if (r.phase != api::sandbox_phase::kRunning) {
      return FailedPreconditionError(
          fmt::format("sandbox \"{}\" cannot be paused while {}", sandbox_id,
                      r.phase.empty() ? "starting" : base::AsciiLower(r.phase)));
    }
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    spec.paused = true;
    SetPauseKeepsMemory(spec, keep_memory);
    // A paused sandbox keeps until it is killed or resumed; its timers start again on resume.
    spec.pause_time.reset();
    spec.shutdown_time.reset();
    api::EncodeSpec(spec, obj);
    return Status::Ok();
  });
  if (!updated.ok()) return updated.status();
  if (routes_ != nullptr) routes_->SandboxChanged(*updated);
  auto paused = WaitForSandbox(
      store_, updated->metadata.namespace_, updated->metadata.name,
      [](const api::Object& obj) -> Result<bool> {
        ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
        if (r.state == E2bState::kDead) {
          return InternalError(fmt::format("sandbox {} failed while pausing: {}", r.sandbox_id,
                                           r.message.empty() ? r.phase : r.message));
        }
        if (r.phase == api::sandbox_phase::kPaused) return true;
        // A request woke it (autoResume) or a connect resumed it meanwhile: it will not be.
        const api::Json& spec = obj.spec();
        if (spec.is_object() && !spec.value("paused", false)) {
          return AbortedError(
              fmt::format("sandbox {} was resumed before its pause finished (a request to it with "
                          "autoResume, or a connect)",
                          r.sandbox_id));
        }
        return false;
      },
      options_.pause_timeout, "Paused");
  if (!paused.ok()) return paused.status();
  Log()->info("sandbox paused id={}", sandbox_id);
  recorded.Succeeded();
  return Status::Ok();
}

Result<SandboxService::ConnectResult> SandboxService::ResumeObject(const api::Object& sandbox,
                                                                   int64_t timeout_seconds,
                                                                   bool keep_memory,
                                                                   bool reset_timer) {
  OperationRecorder recorded(E2bOperations().resume, sandbox.metadata.namespace_);
  auto updated = Modify(sandbox, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
    if (r.state == E2bState::kDead) return NotFound(r.sandbox_id);
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    spec.paused = false;
    obj.metadata.annotations.erase(kIdlePausedAnnotation);
    // The node reboots a frozen sandbox whose strategy is Stop (a stopped one boots anyway).
    if (!keep_memory) SetPauseKeepsMemory(spec, false);
    if (reset_timer) ActiveTimer(spec, r.auto_pause) = EndFromNow(timeout_seconds);
    api::EncodeSpec(spec, obj);
    return Status::Ok();
  });
  if (!updated.ok()) return updated.status();
  auto waited = WaitReady(*updated, options_.ready_timeout);
  if (!waited.ok()) {
    Log()->warn("sandbox resume failed name={}/{} step=wait_ready error={}",
                sandbox.metadata.namespace_, sandbox.metadata.name, waited.status().ToString());
    return waited.status();
  }
  const api::Object& ready = *waited;
  // envd keeps its state across a freeze, but a sandbox restarted under us would have lost it:
  // /init is idempotent, so it is always replayed.
  if (Status s = InitEnvd(ready); !s.ok()) {
    Log()->warn("sandbox resume failed name={}/{} step=envd_init error={}",
                ready.metadata.namespace_, ready.metadata.name, s.ToString());
    return s;
  }
  if (routes_ != nullptr) routes_->SandboxChanged(ready);
  ASSIGN_OR_RETURN(SandboxRecord record, RecordWithToken(ready));
  Log()->info("sandbox resumed id={}", record.sandbox_id);
  recorded.Succeeded();
  return ConnectResult{std::move(record), true};
}

Result<SandboxService::ConnectResult> SandboxService::Connect(const auth::Principal& who,
                                                              std::string_view sandbox_id,
                                                              int64_t timeout_seconds,
                                                              bool keep_memory) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  if (r.state == E2bState::kPaused) return ResumeObject(o, timeout_seconds, keep_memory);
  base::WallTime end = EndFromNow(timeout_seconds);
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord cur, RecordFromObject(obj));
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    auto& timer = ActiveTimer(spec, cur.auto_pause);
    if (timer && *timer < end) timer = end;  // extend only; no timer = never ends
    api::EncodeSpec(spec, obj);
    return Status::Ok();
  });
  if (!updated.ok()) return updated.status();
  ASSIGN_OR_RETURN(SandboxRecord current, RecordWithToken(*updated));
  if (current.phase != api::sandbox_phase::kRunning || !current.ready) {
    ASSIGN_OR_RETURN(api::Object ready, WaitReady(*updated, options_.ready_timeout));
    ASSIGN_OR_RETURN(current, RecordWithToken(ready));
  }
  return ConnectResult{std::move(current), false};
}

Result<SandboxRecord> SandboxService::Resume(const auth::Principal& who,
                                             std::string_view sandbox_id, int64_t timeout_seconds) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  if (r.state != E2bState::kPaused) {
    return FailedPreconditionError(fmt::format("sandbox \"{}\" is already running", sandbox_id));
  }
  ASSIGN_OR_RETURN(ConnectResult result, ResumeObject(o, timeout_seconds));
  return std::move(result.record);
}

Status SandboxService::ResumeForTraffic(std::string_view namespace_, std::string_view name) {
  ASSIGN_OR_RETURN(api::Object o, store_.Get(api::SandboxKind(), namespace_, name));
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  if (r.state != E2bState::kPaused) return Status::Ok();
  const bool idle_paused = o.metadata.annotations.contains(kIdlePausedAnnotation);
  return ResumeObject(o, options_.v2_timeouts.default_seconds, /*keep_memory=*/true,
                      /*reset_timer=*/!idle_paused)
      .status();
}

Status SandboxService::PauseIdle(std::string_view namespace_, std::string_view name,
                                 std::string_view uid) {
  ASSIGN_OR_RETURN(api::Object o, store_.Get(api::SandboxKind(), namespace_, name));
  if (o.metadata.uid != uid) return NotFoundError(fmt::format("sandbox {} was replaced", name));
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
    if (r.state != E2bState::kRunning || r.phase != api::sandbox_phase::kRunning) {
      return FailedPreconditionError(fmt::format("sandbox {} is not running", r.sandbox_id));
    }
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    spec.paused = true;
    spec.pause_time.reset();  // paused now; the shutdown timer still ends it
    api::EncodeSpec(spec, obj);
    obj.metadata.annotations[kAutoResumeAnnotation] = "true";
    obj.metadata.annotations[kIdlePausedAnnotation] = "true";
    return Status::Ok();
  });
  if (!updated.ok()) return updated.status();
  if (routes_ != nullptr) routes_->SandboxChanged(*updated);
  return Status::Ok();
}

Status SandboxService::SetTimeout(const auth::Principal& who, std::string_view sandbox_id,
                                  int64_t seconds) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  base::WallTime end = EndFromNow(seconds);
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    // A paused sandbox has no pause to schedule: its timeout can only end it.
    bool pause = r.auto_pause && r.state != E2bState::kPaused;
    ActiveTimer(spec, pause) = end;
    api::EncodeSpec(spec, obj);
    return Status::Ok();
  });
  return updated.status();
}

Status SandboxService::SetNetwork(const auth::Principal& who, std::string_view sandbox_id,
                                  const sbnet::EgressPolicy& policy) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  const std::string text = api::DumpJson(sbnet::EgressPolicyToJson(policy));
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    obj.metadata.annotations[api::annotations::kNetwork] = text;
    obj.metadata.labels[api::labels::kAllowInternetAccess] =
        policy.allow_internet ? "true" : "false";
    return Status::Ok();
  });
  if (!updated.ok()) return updated.status();
  // In force when the call returns, not when the node's reconcile gets to it.
  if (node_ != nullptr) return node_->ApplyNetwork(*updated);
  return Status::Ok();
}

Status SandboxService::Refresh(const auth::Principal& who, std::string_view sandbox_id,
                               int64_t seconds) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  base::WallTime end = EndFromNow(seconds);
  auto updated = Modify(o, [&](api::Object& obj) -> Status {
    ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(obj));
    ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxSpec>(obj));
    auto& timer = ActiveTimer(spec, r.auto_pause);
    if (timer && *timer < end) timer = end;
    api::EncodeSpec(spec, obj);
    return Status::Ok();
  });
  return updated.status();
}

Result<std::vector<UsageSample>> SandboxService::Metrics(const auth::Principal& who,
                                                         std::string_view sandbox_id,
                                                         const MetricsQuery& query) {
  ASSIGN_OR_RETURN(api::Object o, Find(who, sandbox_id, false));
  std::vector<UsageSample> out;
  if (node_ == nullptr) return out;
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  for (auto& s : node_->Usage(r.sandbox_id)) {
    if (query.start && s.time < *query.start) continue;
    if (query.end && s.time > *query.end) continue;
    out.push_back(s);
  }
  return out;
}

}  // namespace warren::server::e2b
