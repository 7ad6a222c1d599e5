#include "controller/pub_controller.h"

#include <fmt/format.h>

#include "api/kinds.h"
#include "api/policy_kinds.h"
#include "api/typed_codec.h"
#include "api/types/pod_unavailable_budget.h"
#include "api/types/sandbox_set.h"
#include "base/log.h"
#include "controller/disruption_budget.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("pub");
  return logger;
}

std::string KeyOf(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

}  // namespace

PubController::PubController(store::Store& store, base::Clock& clock)
    : store_(store),
      clock_(clock),
      budgets_(store, {.kind = &api::PodUnavailableBudgetKind(), .name = "podunavailablebudgets"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "pub sandboxes"}),
      sets_(store, {.kind = &api::SandboxSetKind(), .name = "pub sandboxsets"}) {
  budgets_.AddHandler([this](const Informer::Change& c) { queue_.Add(KeyOf(*c.object)); });
  sandboxes_.AddHandler([this](const Informer::Change& c) {
    const api::Object& o = *c.object;
    // Only what a budget reads: labels, owner, phase, conditions, deletion.
    if (c.type == store::EventType::kModified && c.old &&
        c.old->metadata.labels == o.metadata.labels &&
        c.old->metadata.deletion_timestamp == o.metadata.deletion_timestamp &&
        c.old->metadata.owner_references == o.metadata.owner_references &&
        c.old->status() == o.status()) {
      return;
    }
    QueueNamespace(o.metadata.namespace_);
  });
  sets_.AddHandler([this](const Informer::Change& c) {
    auto replicas = [](const api::Object& set) {
      const api::Json& spec = set.spec();
      return spec.is_object() ? spec.value("replicas", api::Json()) : api::Json();
    };
    if (c.type == store::EventType::kModified && c.old && replicas(*c.old) == replicas(*c.object)) {
      return;
    }
    QueueNamespace(c.object->metadata.namespace_);
  });
}

PubController::~PubController() { Stop(); }

Status PubController::Start() {
  RETURN_IF_ERROR(sandboxes_.Start());
  RETURN_IF_ERROR(sets_.Start());
  RETURN_IF_ERROR(budgets_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void PubController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  budgets_.Stop();
  sandboxes_.Stop();
  sets_.Stop();
}

void PubController::QueueNamespace(const std::string& ns) {
  for (const auto& b : budgets_.List()) {
    if (b->metadata.namespace_ == ns) queue_.Add(KeyOf(*b));
  }
}

void PubController::Run() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    ++reconciles_;
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      if (s.code() != StatusCode::kAborted) {
        Log()->warn("budget={} reconcile failed, retrying: {}", *key, s.ToString());
      }
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

Status PubController::Reconcile(const std::string& key) {
  auto slash = key.find('/');
  const std::string ns = key.substr(0, slash);
  const std::string name = key.substr(slash + 1);
  auto budget = store_.Get(api::PodUnavailableBudgetKind(), ns, name);
  if (!budget.ok()) {
    return budget.status().code() == StatusCode::kNotFound ? Status::Ok() : budget.status();
  }
  if (budget->metadata.deletion_timestamp) return Status::Ok();
  // Listed after the budget was read: a sandbox its status names and this list lacks is gone.
  store::ListOptions options;
  options.namespace_ = ns;
  ASSIGN_OR_RETURN(store::ObjectList list, store_.List(api::SandboxKind(), options));
  std::vector<const api::Object*> sandboxes;
  for (const auto& s : list.items) sandboxes.push_back(&s);
  std::optional<int32_t> replicas;
  auto spec = api::DecodeSpec<api::PodUnavailableBudgetSpec>(*budget);
  if (spec.ok() && spec->target_ref) {
    auto set = store_.Get(api::SandboxSetKind(), ns, spec->target_ref->name);
    if (set.ok()) {
      auto set_spec = api::DecodeSpec<api::SandboxSetSpec>(*set);
      if (set_spec.ok() && set_spec->replicas) replicas = *set_spec->replicas;
    } else if (set.status().code() != StatusCode::kNotFound) {
      return set.status();
    }
  }
  const base::WallTime now = clock_.Now();
  auto view = EvaluateBudget(*budget, sandboxes, replicas, now, /*prune=*/true);
  api::Object updated = *budget;
  if (!view.ok()) {
    // A budget that cannot be judged protects nothing it can name; say so on it.
    api::PodUnavailableBudgetStatus status;
    auto old = api::DecodeStatus<api::PodUnavailableBudgetStatus>(*budget);
    if (old.ok()) status = *old;
    status.observed_generation = budget->metadata.generation;
    api::SetCondition(status.conditions,
                      {.type = "DisruptionAllowed",
                       .status = "False",
                       .reason = "SyncFailed",
                       .message = std::string(view.status().message()),
                       .observed_generation = budget->metadata.generation},
                      now);
    EncodeBudgetStatus(status, updated);
  } else {
    EncodeBudgetStatus(view->status, updated);
    if (auto next = NextExpiry(view->status)) {
      auto delay = std::chrono::duration_cast<std::chrono::milliseconds>(*next - now);
      queue_.AddAfter(
          key, std::max(delay, std::chrono::milliseconds(0)) + std::chrono::milliseconds(10));
    }
  }
  if (updated.status() == budget->status()) return Status::Ok();
  // Over the revision read: an eviction admitted meanwhile makes this write fail and look again.
  auto written = store_.UpdateStatus(std::move(updated));
  if (!written.ok() && written.status().code() != StatusCode::kNotFound) return written.status();
  return Status::Ok();
}

}  // namespace warren::controller
