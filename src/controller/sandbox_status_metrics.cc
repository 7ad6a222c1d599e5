#include "controller/sandbox_status_metrics.h"

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"

namespace warren::controller {
namespace {

namespace phase = api::sandbox_phase;

const obs::Labels kSource = {{"source", "k8s"}};
// Every phase a Sandbox can report, in the order of Series::phase.
constexpr const char* kPhaseNames[] = {
    phase::kPending,   phase::kRunning,   phase::kPaused, phase::kResuming,    phase::kUpgrading,
    phase::kRecycling, phase::kSucceeded, phase::kFailed, phase::kTerminating,
};

double UnixSeconds(base::WallTime t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string LabelOf(const api::Object& o, const char* key) {
  auto it = o.metadata.labels.find(key);
  return it == o.metadata.labels.end() ? std::string() : it->second;
}

}  // namespace

SandboxStatusMetrics::SandboxStatusMetrics(store::Store& store, obs::Metrics& m)
    : phase_(m.Gauge("sandbox_status_phase",
                     "1 for the Sandbox's status.phase, 0 for the other phases.", kSource)),
      ready_(m.Gauge("sandbox_status_ready", "1 while the Sandbox's Ready condition is True.",
                     kSource)),
      created_(m.Gauge("sandbox_created", "Creation time of the Sandbox (Unix seconds).", kSource)),
      deletion_(m.Gauge("sandbox_deletion_timestamp",
                        "Deletion time of a Sandbox being deleted (Unix seconds).", kSource)),
      info_(m.Gauge("sandbox_info", "1 per Sandbox, with its pool, node and template.", kSource)),
      informer_(std::make_unique<Informer>(
          store, Informer::Options{.kind = &api::SandboxKind(), .name = "sandbox-metrics"})) {
  static_assert(std::size(kPhaseNames) == kPhases);
  informer_->AddHandler([this](const Informer::Change& c) {
    if (c.type == store::EventType::kDeleted) {
      Remove(c.object->metadata.namespace_, c.object->metadata.name);
    } else {
      Update(*c.object);
    }
  });
}

SandboxStatusMetrics::~SandboxStatusMetrics() { Stop(); }

Status SandboxStatusMetrics::Start() { return informer_->Start(); }

void SandboxStatusMetrics::Stop() { informer_->Stop(); }

void SandboxStatusMetrics::Update(const api::Object& sandbox) {
  const std::string& ns = sandbox.metadata.namespace_;
  const std::string& name = sandbox.metadata.name;
  auto status = api::DecodeStatus<api::SandboxStatus>(sandbox);
  const std::string current = status.ok() ? status->phase : std::string();
  const bool ready = status.ok() && api::IsConditionTrue(status->conditions, "Ready");
  std::string tmpl;
  if (const api::Json& spec = sandbox.spec(); spec.is_object()) {
    auto ref = spec.find("templateRef");
    if (ref != spec.end() && ref->is_object()) tmpl = ref->value("name", "");
  }
  obs::Labels info_labels = {{"namespace", ns},
                             {"name", name},
                             {"sandbox_pool", LabelOf(sandbox, api::labels::kSandboxPool)},
                             {"node", status.ok() ? status->node_name : std::string()},
                             {"sandbox_template", tmpl}};
  const obs::Labels object = {{"namespace", ns}, {"name", name}};

  std::lock_guard lock(mu_);
  for (int i = 0; i < kPhases; ++i) {
    obs::Labels l = object;
    l.emplace("phase", kPhaseNames[i]);
    phase_.Add(l).Set(current == kPhaseNames[i] ? 1 : 0);
  }
  ready_.Add(object).Set(ready ? 1 : 0);
  if (sandbox.metadata.creation_timestamp) {
    created_.Add(object).Set(UnixSeconds(*sandbox.metadata.creation_timestamp));
  }
  if (sandbox.metadata.deletion_timestamp) {
    deletion_.Add(object).Set(UnixSeconds(*sandbox.metadata.deletion_timestamp));
  }
  obs::Labels& last = info_labels_[{ns, name}];
  if (last != info_labels) {
    // A label changed (the node was assigned, the member was claimed): one series, not two.
    if (!last.empty()) info_.Remove(&info_.Add(last));
    last = info_labels;
  }
  info_.Add(info_labels).Set(1);
}

void SandboxStatusMetrics::Remove(const std::string& ns, const std::string& name) {
  const obs::Labels object = {{"namespace", ns}, {"name", name}};
  std::lock_guard lock(mu_);
  // Add returns the existing series (or makes one that goes at once): removal by labels.
  for (const char* phase_name : kPhaseNames) {
    obs::Labels l = object;
    l.emplace("phase", phase_name);
    phase_.Remove(&phase_.Add(l));
  }
  ready_.Remove(&ready_.Add(object));
  created_.Remove(&created_.Add(object));
  deletion_.Remove(&deletion_.Add(object));
  auto it = info_labels_.find({ns, name});
  if (it != info_labels_.end()) {
    if (!it->second.empty()) info_.Remove(&info_.Add(it->second));
    info_labels_.erase(it);
  }
}

}  // namespace warren::controller
