#include "controller/sandbox_status_metrics.h"

#include <algorithm>
#include <iterator>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"

namespace warren::controller {
namespace {

namespace phase = api::sandbox_phase;

// Every phase a Sandbox can report.
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

prometheus::MetricFamily GaugeFamily(std::string name, std::string help) {
  return {.name = std::move(name), .help = std::move(help), .type = prometheus::MetricType::Gauge};
}

// One series: the constant label source="k8s" first, then the others by name (as a
// prometheus-cpp family would list them).
void AddSeries(prometheus::MetricFamily& family,
               std::vector<prometheus::ClientMetric::Label> labels, double value) {
  prometheus::ClientMetric m;
  m.label.reserve(labels.size() + 1);
  m.label.push_back({"source", "k8s"});
  std::move(labels.begin(), labels.end(), std::back_inserter(m.label));
  m.gauge.value = value;
  family.metric.push_back(std::move(m));
}

}  // namespace

SandboxStatusMetrics::SandboxStatusMetrics(store::Store& store, obs::Metrics& m)
    : metrics_(m),
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
  source_id_ = metrics_.AddFamilySource("sandbox-status", [this] { return Render(); });
}

SandboxStatusMetrics::~SandboxStatusMetrics() {
  Stop();
  metrics_.RemoveFamilySource(source_id_);
}

Status SandboxStatusMetrics::Start() { return informer_->Start(); }

void SandboxStatusMetrics::Stop() { informer_->Stop(); }

void SandboxStatusMetrics::Update(const api::Object& sandbox) {
  auto status = api::DecodeStatus<api::SandboxStatus>(sandbox);
  Row row;
  if (status.ok()) {
    auto named = std::find(std::begin(kPhaseNames), std::end(kPhaseNames), status->phase);
    if (named != std::end(kPhaseNames)) row.phase = static_cast<int>(named - kPhaseNames);
    row.ready = api::IsConditionTrue(status->conditions, "Ready");
    row.node = status->node_name;
  }
  if (const api::Json& spec = sandbox.spec(); spec.is_object()) {
    auto ref = spec.find("templateRef");
    if (ref != spec.end() && ref->is_object()) row.template_name = ref->value("name", "");
  }
  row.pool = LabelOf(sandbox, api::labels::kSandboxPool);
  if (sandbox.metadata.creation_timestamp) {
    row.created = UnixSeconds(*sandbox.metadata.creation_timestamp);
  }
  if (sandbox.metadata.deletion_timestamp) {
    row.deletion = UnixSeconds(*sandbox.metadata.deletion_timestamp);
  }
  std::lock_guard lock(mu_);
  rows_.insert_or_assign({sandbox.metadata.namespace_, sandbox.metadata.name}, std::move(row));
}

void SandboxStatusMetrics::Remove(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  rows_.erase({ns, name});
}

std::vector<prometheus::MetricFamily> SandboxStatusMetrics::Render() const {
  auto phase = GaugeFamily("sandbox_status_phase",
                           "1 for the Sandbox's status.phase, 0 for the other phases.");
  auto ready =
      GaugeFamily("sandbox_status_ready", "1 while the Sandbox's Ready condition is True.");
  auto created = GaugeFamily("sandbox_created", "Creation time of the Sandbox (Unix seconds).");
  auto deletion = GaugeFamily("sandbox_deletion_timestamp",
                              "Deletion time of a Sandbox being deleted (Unix seconds).");
  auto info = GaugeFamily("sandbox_info", "1 per Sandbox, with its pool, node and template.");
  // Rendered from a copy, so a scrape holds the lock only while the rows are copied: Update runs
  // on the store's watch thread, which every informer shares.
  decltype(rows_) rows;
  {
    std::lock_guard lock(mu_);
    rows = rows_;
  }
  phase.metric.reserve(rows.size() * kPhases);
  ready.metric.reserve(rows.size());
  created.metric.reserve(rows.size());
  info.metric.reserve(rows.size());
  for (const auto& [key, row] : rows) {
    const auto& [ns, name] = key;
    for (int i = 0; i < kPhases; ++i) {
      AddSeries(phase, {{"name", name}, {"namespace", ns}, {"phase", kPhaseNames[i]}},
                row.phase == i ? 1 : 0);
    }
    AddSeries(ready, {{"name", name}, {"namespace", ns}}, row.ready ? 1 : 0);
    if (row.created) AddSeries(created, {{"name", name}, {"namespace", ns}}, *row.created);
    if (row.deletion) AddSeries(deletion, {{"name", name}, {"namespace", ns}}, *row.deletion);
    AddSeries(info,
              {{"name", name},
               {"namespace", ns},
               {"node", row.node},
               {"sandbox_pool", row.pool},
               {"sandbox_template", row.template_name}},
              1);
  }
  std::vector<prometheus::MetricFamily> out;
  for (auto* family : {&phase, &ready, &created, &deletion, &info}) {
    if (!family->metric.empty()) out.push_back(std::move(*family));
  }
  return out;
}

}  // namespace warren::controller
