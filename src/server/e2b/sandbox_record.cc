#include "server/e2b/sandbox_record.h"

#include <fmt/format.h>

#include "api/json.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/volume_mounts.h"
#include "base/time_format.h"
#include "server/e2b/annotations.h"

namespace warren::server::e2b {
namespace {

std::string_view Get(const std::map<std::string, std::string>& m, std::string_view key) {
  auto it = m.find(std::string(key));
  return it == m.end() ? std::string_view() : std::string_view(it->second);
}

E2bState StateOf(const api::Object& o, const api::SandboxSpec& spec, std::string_view phase) {
  namespace phase_ns = api::sandbox_phase;
  if (o.metadata.deletion_timestamp) return E2bState::kDeleting;
  // Killed, and going back to its warm pool (controller/recycle_controller.h).
  if (Get(o.metadata.annotations, api::annotations::kCleanup) == "true") return E2bState::kDeleting;
  if (phase == phase_ns::kFailed || phase == phase_ns::kSucceeded ||
      phase == phase_ns::kTerminating) {
    return E2bState::kDead;
  }
  if (spec.paused || phase == phase_ns::kPaused) return E2bState::kPaused;
  return E2bState::kRunning;
}

// Resources of the main container: limits, else requests.
void FillResources(const api::SandboxSpec& spec, SandboxRecord& r) {
  if (!spec.pod_template || spec.pod_template->spec.containers.empty()) return;
  const auto& res = spec.pod_template->spec.containers[0].resources;
  auto pick = [&](const char* name) -> const api::Quantity* {
    if (auto it = res.limits.find(name); it != res.limits.end()) return &it->second;
    if (auto it = res.requests.find(name); it != res.requests.end()) return &it->second;
    return nullptr;
  };
  if (const auto* cpu = pick("cpu")) r.cpu_count = static_cast<int32_t>(cpu->Value());
  if (const auto* mem = pick("memory")) r.memory_mb = mem->Value() / (1024 * 1024);
  if (const auto* disk = pick("ephemeral-storage")) r.disk_mb = disk->Value() / (1024 * 1024);
}

}  // namespace

base::WallTime SandboxRecord::EndAt() const {
  if (auto_pause && pause_time) return *pause_time;
  if (shutdown_time) return *shutdown_time;
  if (pause_time) return *pause_time;
  return started_at;
}

Result<SandboxRecord> RecordFromObject(const api::Object& o) {
  SandboxRecord r;
  const auto& labels = o.metadata.labels;
  const auto& ann = o.metadata.annotations;
  r.sandbox_id = std::string(Get(labels, api::labels::kSandboxId));
  if (r.sandbox_id.empty()) r.sandbox_id = std::string(Get(ann, api::annotations::kSandboxId));
  if (r.sandbox_id.empty()) {
    return InvalidArgumentError(fmt::format("sandbox {} has no sandbox id", o.Key()));
  }
  r.namespace_ = o.metadata.namespace_;
  r.name = o.metadata.name;
  r.uid = o.metadata.uid;
  r.resource_version = o.metadata.resource_version;
  r.owner = std::string(Get(ann, api::annotations::kOwner));
  r.auto_pause = Get(ann, kAutoPauseAnnotation) == "true";
  r.auto_resume = Get(ann, kAutoResumeAnnotation) == "true";
  r.pool_member = !Get(labels, api::labels::kSandboxPool).empty() &&
                  Get(labels, api::labels::kSandboxClaimed) != "true";

  r.template_id = std::string(Get(ann, kTemplateIdAnnotation));
  if (auto mounts = api::VolumeMountsOf(o); mounts.ok()) {
    for (auto& m : *mounts) r.volume_mounts.emplace_back(std::move(m.name), std::move(m.path));
  }

  if (r.template_id.empty()) r.template_id = std::string(Get(labels, api::labels::kSandboxPool));
  if (r.template_id.empty()) {
    r.template_id = std::string(Get(labels, api::labels::kSandboxTemplate));
  }

  if (auto t = base::ParseRfc3339(Get(ann, kStartedAtAnnotation))) {
    r.started_at = *t;
  } else if (auto claimed = base::ParseRfc3339(Get(ann, api::annotations::kClaimTimestamp))) {
    r.started_at = *claimed;
  } else if (o.metadata.creation_timestamp) {
    r.started_at = *o.metadata.creation_timestamp;
  }

  if (auto md = Get(ann, kMetadataAnnotation); !md.empty()) {
    auto doc = api::ParseJson(md);
    if (doc.ok() && doc->is_object()) {
      for (const auto& [k, v] : doc->items()) {
        if (v.is_string()) r.metadata[k] = v.get<std::string>();
      }
    }
  }

  // A spec or status the node cannot have written would make the object unusable for E2B;
  // report what can be read rather than hiding the sandbox.
  auto spec = api::DecodeSpec<api::SandboxSpec>(o);
  api::SandboxSpec s = spec.ok() ? std::move(*spec) : api::SandboxSpec{};
  auto status = api::DecodeStatus<api::SandboxStatus>(o);
  api::SandboxStatus st = status.ok() ? std::move(*status) : api::SandboxStatus{};
  r.shutdown_time = s.shutdown_time;
  r.pause_time = s.pause_time;
  r.phase = st.phase;
  r.ready = api::IsConditionTrue(st.conditions, "Ready");
  r.message = st.message;
  if (r.message.empty()) {
    if (const auto* c = api::FindCondition(st.conditions, "Ready"); c && c->status != "True") {
      r.message = c->reason.empty() ? c->message : fmt::format("{}: {}", c->reason, c->message);
    }
  }
  r.state = StateOf(o, s, st.phase);
  FillResources(s, r);
  return r;
}

}  // namespace warren::server::e2b
