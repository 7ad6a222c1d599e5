#include "server/e2b/snapshot_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/checkpoint.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/ids.h"
#include "base/log.h"
#include "server/e2b/annotations.h"
#include "server/e2b/e2b_metrics.h"
#include "server/e2b/sandbox_waiter.h"
#include "server/e2b/templates.h"

namespace warren::server::e2b {
namespace {

using api::Json;
using namespace std::chrono_literals;

// Marks the Checkpoints E2B lists as snapshots (forks take unlisted ones).
constexpr const char* kSnapshotLabel = "e2b.warren.dev/snapshot";
constexpr const char* kSnapshotNameAnnotation = "e2b.warren.dev/snapshot-name";
constexpr auto kCaptureTimeout = 120s;
constexpr const char* kForkCheckpointTtl = "30s";

auto Log() { return base::Logger("e2b"); }

std::string Label(const api::Object& o, const char* key) {
  auto it = o.metadata.labels.find(key);
  return it == o.metadata.labels.end() ? std::string() : it->second;
}

std::string Annotation(const api::Object& o, const char* key) {
  auto it = o.metadata.annotations.find(key);
  return it == o.metadata.annotations.end() ? std::string() : it->second;
}

SnapshotInfo InfoOf(const api::Object& cp) {
  SnapshotInfo info;
  info.snapshot_id = cp.metadata.name;
  if (std::string name = Annotation(cp, kSnapshotNameAnnotation); !name.empty()) {
    info.names.push_back(std::move(name));
  }
  info.sandbox_id = Label(cp, api::labels::kSandboxId);
  if (cp.metadata.creation_timestamp) info.created_at = *cp.metadata.creation_timestamp;
  return info;
}

// The source must be running: a paused sandbox is refused (resume it first), as is one still
// starting.
Status CheckCapturable(const api::Object& sandbox, std::string_view sandbox_id) {
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(sandbox));
  if (r.state == E2bState::kPaused) {
    return FailedPreconditionError(fmt::format(
        "sandbox \"{}\" is paused; resume it (connect) before a snapshot or fork", sandbox_id));
  }
  if (r.phase != api::sandbox_phase::kRunning) {
    return FailedPreconditionError(fmt::format("sandbox \"{}\" is not running (phase {})",
                                               sandbox_id, r.phase.empty() ? "none" : r.phase));
  }
  return Status::Ok();
}

// Copies of a gVisor sandbox keep its memory: its processes live in the Sentry (whose file
// writes are one instant with its memory only when both are captured together), and the
// runtime can restore them, so every copy goes on where the source was. Native copies keep
// the files; their processes start afresh.
bool CopiesKeepMemory(const Json& pod_template) {
  const Json* spec =
      pod_template.is_object() && pod_template.contains("spec") ? &pod_template["spec"] : nullptr;
  return spec != nullptr && spec->is_object() &&
         spec->value("runtimeClassName", "") == api::kRuntimeGvisor;
}

// The pod template copies start from: the sandbox's inline one, or (a warm-pool member) the
// SandboxTemplate its templateRef names, as it is now.
Result<Json> PodTemplateOf(store::Store& store, const api::Object& sandbox) {
  const Json& spec = sandbox.spec();
  if (spec.is_object()) {
    if (auto t = spec.find("template"); t != spec.end() && t->is_object()) return *t;
    if (auto ref = spec.find("templateRef"); ref != spec.end() && ref->is_object()) {
      const std::string name = ref->value("name", "");
      auto tpl = store.Get(api::SandboxTemplateKind(), sandbox.metadata.namespace_, name);
      if (tpl.ok() && tpl->spec().is_object() && tpl->spec().contains("template")) {
        return tpl->spec()["template"];
      }
    }
  }
  return FailedPreconditionError(
      fmt::format("sandbox {} has no pod template to start copies from", sandbox.metadata.name));
}

}  // namespace

SnapshotService::SnapshotService(store::Store& store, SandboxService& sandboxes)
    : store_(store), sandboxes_(sandboxes) {}

Result<api::Object> SnapshotService::Capture(
    const api::Object& source, bool memory, const std::string& name,
    const std::map<std::string, std::string>& labels,
    const std::map<std::string, std::string>& annotations, const std::string& ttl,
    const std::function<Status(const api::Object&)>& alongside) {
  api::Object cp;
  cp.api_version = "agents.kruise.io/v1alpha1";
  cp.kind = "Checkpoint";
  cp.metadata.name = name;
  cp.metadata.namespace_ = source.metadata.namespace_;
  cp.metadata.labels = labels;
  cp.metadata.labels[api::labels::kSandboxName] = source.metadata.name;
  cp.metadata.labels[api::labels::kCheckpointType] = memory ? "memory" : "filesystem";
  cp.metadata.annotations = annotations;
  api::CheckpointSpec spec;
  spec.sandbox_name = source.metadata.name;
  spec.keep_running = true;
  spec.persistent_contents = {"filesystem"};
  if (memory) spec.persistent_contents.push_back("memory");
  spec.ttl_after_finished = ttl;
  api::EncodeSpec(spec, cp);
  ASSIGN_OR_RETURN(api::Object created, store_.Create(std::move(cp)));
  if (alongside) {
    if (Status s = alongside(created); !s.ok()) {
      (void)DeleteCheckpoint(created.metadata.namespace_, created.metadata.name);
      return s;
    }
  }
  auto done = WaitForObject(
      store_, api::CheckpointKind(), created.metadata.namespace_, created.metadata.name,
      [](const api::Object& o) -> Result<bool> {
        auto st = api::DecodeStatus<api::CheckpointStatus>(o);
        if (!st.ok()) return false;
        if (st->phase == "Failed") return InternalError(st->message);
        return st->phase == "Succeeded";
      },
      kCaptureTimeout, "Succeeded");
  if (!done.ok()) {
    (void)DeleteCheckpoint(created.metadata.namespace_, created.metadata.name);
    return done.status();
  }
  return done;
}

Status SnapshotService::DeleteCheckpoint(const std::string& namespace_, const std::string& name) {
  auto deleted = store_.Delete(api::CheckpointKind(), namespace_, name);
  if (!deleted.ok() && deleted.status().code() != StatusCode::kNotFound) {
    Log()->warn("deleting checkpoint failed name={}/{} error=\"{}\"", namespace_, name,
                deleted.status().ToString());
    return deleted.status();
  }
  return Status::Ok();
}

Result<SnapshotInfo> SnapshotService::Create(const auth::Principal& who,
                                             std::string_view sandbox_id, const std::string& name) {
  ASSIGN_OR_RETURN(api::Object source, sandboxes_.Lookup(who, sandbox_id));
  OperationRecorder recorded(E2bOperations().snapshot, source.metadata.namespace_);
  RETURN_IF_ERROR(CheckCapturable(source, sandbox_id));
  ASSIGN_OR_RETURN(Json pod_template, PodTemplateOf(store_, source));
  const std::string id = "snap-" + base::RandomHex(8);
  std::map<std::string, std::string> labels = {
      {kSnapshotLabel, "true"}, {api::labels::kSandboxId, Label(source, api::labels::kSandboxId)}};
  std::map<std::string, std::string> annotations = {{api::annotations::kOwner, who.key_id}};
  if (!name.empty()) annotations[kSnapshotNameAnnotation] = name;
  // The template a create names: the source's pod template, starting from the checkpoint;
  // owned by it, so it goes when the snapshot is deleted.
  auto make_template = [&](const api::Object& cp) -> Status {
    api::Object t;
    t.api_version = "agents.kruise.io/v1alpha1";
    t.kind = "SandboxTemplate";
    t.metadata.name = id;
    t.metadata.namespace_ = cp.metadata.namespace_;
    t.metadata.labels[kSnapshotLabel] = "true";
    t.metadata.annotations[api::annotations::kRestoreFrom] = id;
    t.metadata.owner_references.push_back(api::OwnerReference{
        cp.api_version, cp.kind, cp.metadata.name, cp.metadata.uid, true, true});
    t.spec()["template"] = pod_template;
    return store_.Create(std::move(t)).status().WithPrefix("snapshot template");
  };
  ASSIGN_OR_RETURN(api::Object cp,
                   Capture(source, CopiesKeepMemory(pod_template), id, labels, annotations,
                           /*ttl=*/"", make_template));
  Log()->info("snapshot created id={} sandbox={} namespace={} name=\"{}\"", id, sandbox_id,
              cp.metadata.namespace_, name);
  recorded.Succeeded();
  return InfoOf(cp);
}

Result<SnapshotPage> SnapshotService::List(const auth::Principal& who, const SnapshotQuery& query) {
  store::ListOptions options;
  options.namespace_ = who.admin ? "" : who.team;
  std::string selector = kSnapshotLabel;
  if (!query.sandbox_id.empty()) {
    if (!base::IsValidSandboxId(query.sandbox_id)) return SnapshotPage{};
    selector += fmt::format(",{}={}", api::labels::kSandboxId, query.sandbox_id);
  }
  ASSIGN_OR_RETURN(options.label_selector, api::LabelSelector::Parse(selector));
  ASSIGN_OR_RETURN(auto list, store_.List(api::CheckpointKind(), options));
  std::vector<SnapshotInfo> all;
  for (const api::Object& cp : list.items) {
    if (cp.metadata.deletion_timestamp) continue;
    auto st = api::DecodeStatus<api::CheckpointStatus>(cp);
    if (!st.ok() || st->phase != "Succeeded") continue;
    SnapshotInfo info = InfoOf(cp);
    if (!query.name.empty() && info.snapshot_id != query.name &&
        std::find(info.names.begin(), info.names.end(), query.name) == info.names.end()) {
      continue;
    }
    all.push_back(std::move(info));
  }
  // Newest first; the id breaks ties and is the cursor.
  std::sort(all.begin(), all.end(), [](const SnapshotInfo& a, const SnapshotInfo& b) {
    if (a.created_at != b.created_at) return a.created_at > b.created_at;
    return a.snapshot_id < b.snapshot_id;
  });
  size_t begin = 0;
  if (!query.next_token.empty()) {
    auto it = std::find_if(all.begin(), all.end(), [&](const SnapshotInfo& s) {
      return s.snapshot_id == query.next_token;
    });
    if (it == all.end()) {
      return InvalidArgumentError(
          fmt::format("nextToken \"{}\" names no snapshot of this listing", query.next_token));
    }
    begin = static_cast<size_t>(it - all.begin()) + 1;
  }
  SnapshotPage page;
  const size_t end = std::min(all.size(), begin + static_cast<size_t>(query.limit));
  for (size_t i = begin; i < end; ++i) page.items.push_back(all[i]);
  if (end < all.size() && !page.items.empty()) page.next_token = page.items.back().snapshot_id;
  return page;
}

Status SnapshotService::Delete(const auth::Principal& who, std::string_view snapshot_id) {
  std::string ns = who.team;
  if (who.admin) {
    // An admin's snapshot ids reach every team's (ids are unique: random).
    store::ListOptions options;
    ASSIGN_OR_RETURN(options.label_selector, api::LabelSelector::Parse(kSnapshotLabel));
    ASSIGN_OR_RETURN(auto list, store_.List(api::CheckpointKind(), options));
    for (const api::Object& o : list.items) {
      if (o.metadata.name == snapshot_id) ns = o.metadata.namespace_;
    }
  }
  auto cp = store_.Get(api::CheckpointKind(), ns, snapshot_id);
  if (cp.ok() && Label(*cp, kSnapshotLabel) == "true" && !cp->metadata.deletion_timestamp) {
    RETURN_IF_ERROR(DeleteCheckpoint(ns, cp->metadata.name));
    Log()->info("snapshot deleted id={} namespace={}", snapshot_id, ns);
    return Status::Ok();
  }
  if (!cp.ok() && cp.status().code() != StatusCode::kNotFound) return cp.status();
  for (const api::KindInfo* kind : {&api::SandboxTemplateKind(), &api::SandboxSetKind()}) {
    // A snapshot's own template outlives its checkpoint by a moment (the garbage collector).
    if (auto t = store_.Get(*kind, ns, snapshot_id); t.ok() && Label(*t, kSnapshotLabel).empty()) {
      return InvalidArgumentError(
          fmt::format("template \"{}\" is a {}, not a snapshot: manage it with `warren delete`",
                      snapshot_id, kind->kind));
    }
  }
  return NotFoundError(fmt::format("snapshot \"{}\" not found", snapshot_id));
}

Result<std::vector<Result<SandboxRecord>>> SnapshotService::Fork(const auth::Principal& who,
                                                                 std::string_view sandbox_id,
                                                                 const ForkRequest& request) {
  ASSIGN_OR_RETURN(api::Object source, sandboxes_.Lookup(who, sandbox_id));
  OperationRecorder recorded(E2bOperations().clone, source.metadata.namespace_);
  RETURN_IF_ERROR(CheckCapturable(source, sandbox_id));
  ASSIGN_OR_RETURN(Json pod_template, PodTemplateOf(store_, source));
  ASSIGN_OR_RETURN(SandboxRecord record, RecordFromObject(source));
  ASSIGN_OR_RETURN(auto env_vars, sandboxes_.EnvVarsOf(source));
  const std::string id = "fork-" + base::RandomHex(8);
  // Deleted below once the forks hold the layer; the TTL collects it if this process dies
  // before that.
  ASSIGN_OR_RETURN(api::Object cp, Capture(source, CopiesKeepMemory(pod_template), id,
                                           {{api::labels::kSandboxId, record.sandbox_id}},
                                           {{api::annotations::kOwner, who.key_id},
                                            {api::kCheckpointForRequestAnnotation, "fork"}},
                                           kForkCheckpointTtl, nullptr));

  ResolvedTemplate tpl;
  tpl.name = record.template_id;
  tpl.namespace_ = cp.metadata.namespace_;
  tpl.kind = ResolvedTemplate::Kind::kSandboxTemplate;
  tpl.spec_parts["template"] = pod_template;
  tpl.restore_from = id;
  CreateRequest create;
  create.template_id = record.template_id;
  create.timeout_seconds = request.timeout_seconds;
  create.metadata = record.metadata;
  create.env_vars = env_vars;
  // The forks live where the checkpoint is (an admin may fork another team's sandbox).
  auth::Principal owner = who;
  owner.team = cp.metadata.namespace_;
  std::vector<std::future<Result<SandboxRecord>>> pending;
  for (int64_t i = 0; i < request.count; ++i) {
    pending.push_back(std::async(std::launch::async, [this, &owner, &create, &tpl] {
      return sandboxes_.CreateFrom(owner, create, tpl);
    }));
  }
  std::vector<Result<SandboxRecord>> out;
  size_t started = 0;
  for (auto& f : pending) {
    out.push_back(f.get());
    started += out.back().ok();
  }
  // Every fork that started holds the layer through its image lease: the checkpoint can go.
  (void)DeleteCheckpoint(cp.metadata.namespace_, id);
  Log()->info("sandbox forked source={} namespace={} asked={} started={}", sandbox_id,
              cp.metadata.namespace_, request.count, started);
  if (started == out.size()) recorded.Succeeded();
  return out;
}

}  // namespace warren::server::e2b
