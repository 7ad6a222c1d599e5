#include "controller/sandbox_update_ops_controller.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_update_ops.h"
#include "base/log.h"
#include "controller/update_ops_rollout.h"
#include "controller/update_ops_template.h"

namespace warren::controller {
namespace {

namespace phase = api::update_ops_phase;
using api::annotations::kUpgradeResumeTrigger;
using api::labels::kUpdateOps;
using api::labels::kUpgradeFailed;

constexpr const char* kProgressing = "Progressing";
constexpr const char* kInplaceUpdate = "InplaceUpdate";
constexpr std::chrono::seconds kCacheWait{5};

auto Log() {
  static auto logger = base::Logger("updateops");
  return logger;
}

std::string KeyOf(const api::Object& o) {
  return fmt::format("{}/{}", o.metadata.namespace_, o.metadata.name);
}

std::string PhaseOf(const api::Object& ops) {
  const api::Json& st = ops.status();
  return st.is_object() ? st.value("phase", "") : "";
}

bool Active(const api::Object& ops) {
  if (ops.metadata.deletion_timestamp) return false;
  std::string p = PhaseOf(ops);
  return p != phase::kCompleted && p != phase::kFailed;
}

// Whether `other` came before `self` and so keeps the namespace. Creation times have whole
// seconds, so two ops made in the same second are told apart by which this controller saw first:
// the first one reconciled writes a phase (and the cache is made to hold it) before the next is
// looked at. Two that both have one (a restart between) go by name.
bool OtherCameFirst(const api::Object& other, const api::Object& self) {
  auto to = other.metadata.creation_timestamp.value_or(base::WallTime{});
  auto ts = self.metadata.creation_timestamp.value_or(base::WallTime{});
  if (to != ts) return to < ts;
  const bool other_claimed = !PhaseOf(other).empty();
  const bool self_claimed = !PhaseOf(self).empty();
  if (other_claimed != self_claimed) return other_claimed;
  return other_claimed && other.metadata.name < self.metadata.name;
}

std::string LabelOf(const api::Object& o, const char* key) {
  auto it = o.metadata.labels.find(key);
  return it == o.metadata.labels.end() ? "" : it->second;
}

// One selected sandbox and where it is.
struct Member {
  ObjectPtr sandbox;
  std::optional<UpdateTarget> target;  // absent: its template cannot be resolved or patched
  std::string error;                   // why not, when absent
  std::string sandbox_phase;
  UpdateState state = UpdateState::kPending;
  std::string failure;  // what the node said, for a failed one
};

Member Classify(ObjectPtr sandbox, const api::Json& patch, const TemplateLookup& lookup) {
  Member m{.sandbox = std::move(sandbox)};
  const api::Object& s = *m.sandbox;
  auto st = api::DecodeStatus<api::SandboxStatus>(s);
  api::SandboxStatus status = st.ok() ? *st : api::SandboxStatus{};
  m.sandbox_phase = status.phase;
  auto target = ResolveUpdateTarget(s, patch, lookup);
  if (!target.ok()) {
    m.error = target.status().message();
    // Once reported (labelled upgrade-failed) it counts as failed; until then it waits to be
    // reached, so an unusable sandbox in the partition stops nothing.
    m.state = LabelOf(s, kUpgradeFailed) == "true" ? UpdateState::kFailed : UpdateState::kPending;
    m.failure = m.error;
    return m;
  }
  m.target = std::move(target).value();
  const std::string& want = m.target->target_revision;
  const api::Json& raw = s.status();
  std::string failed_revision = raw.is_object() ? raw.value("failedUpdateRevision", "") : "";
  if (failed_revision == want) {
    m.state = UpdateState::kFailed;
    const api::Condition* c = api::FindCondition(status.conditions, kInplaceUpdate);
    m.failure = c != nullptr && !c->message.empty() ? c->message
                : !status.message.empty()           ? status.message
                                                    : "the node gave up on revision " + want;
  } else if (status.update_revision == want && (api::IsConditionTrue(status.conditions, "Ready") ||
                                                status.phase == api::sandbox_phase::kPaused)) {
    // A paused sandbox is never Ready; on the target revision and paused, it is done.
    m.state = UpdateState::kUpdated;
  } else if (m.target->current_revision == want) {
    m.state = UpdateState::kUpdating;  // written; the node has not finished
  }
  return m;
}

}  // namespace

SandboxUpdateOpsController::SandboxUpdateOpsController(store::Store& store,
                                                       obs::EventRecorder* events,
                                                       base::Clock& clock)
    : store_(store),
      events_(events),
      clock_(clock),
      ops_(store, {.kind = &api::SandboxUpdateOpsKind(), .name = "sandboxupdateops"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "sandboxupdateops sandboxes"}),
      templates_(store,
                 {.kind = &api::SandboxTemplateKind(), .name = "sandboxupdateops templates"}) {
  ops_.AddHandler([this](const Informer::Change& c) {
    if (c.type != store::EventType::kDeleted) queue_.Add(KeyOf(*c.object));
  });
  sandboxes_.AddHandler(
      [this](const Informer::Change& c) { QueueNamespace(c.object->metadata.namespace_); });
  templates_.AddHandler(
      [this](const Informer::Change& c) { QueueNamespace(c.object->metadata.namespace_); });
}

SandboxUpdateOpsController::~SandboxUpdateOpsController() { Stop(); }

Status SandboxUpdateOpsController::Start() {
  RETURN_IF_ERROR(templates_.Start());
  RETURN_IF_ERROR(sandboxes_.Start());
  RETURN_IF_ERROR(ops_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void SandboxUpdateOpsController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  ops_.Stop();
  sandboxes_.Stop();
  templates_.Stop();
}

void SandboxUpdateOpsController::QueueNamespace(const std::string& namespace_) {
  for (const auto& o : ops_.List()) {
    if (o->metadata.namespace_ == namespace_) queue_.Add(KeyOf(*o));
  }
}

void SandboxUpdateOpsController::Run() {
  while (auto key = queue_.Get()) {
    Status s = Reconcile(*key);
    if (s.ok()) {
      queue_.Forget(*key);
    } else {
      Log()->warn("ops={} reconcile failed, retrying: {}", *key, s.ToString());
      queue_.AddWithBackoff(*key);
    }
    queue_.Done(*key);
  }
}

void SandboxUpdateOpsController::Event(const api::Object& ops, bool warning,
                                       std::string_view reason, std::string_view message) {
  Log()->info("ops={} reason={} message=\"{}\"", KeyOf(ops), reason, message);
  if (events_ == nullptr) return;
  Status s =
      warning ? events_->Warning(ops, reason, message) : events_->Normal(ops, reason, message);
  if (!s.ok()) Log()->warn("ops={} event {} not recorded: {}", KeyOf(ops), reason, s.ToString());
}

Status SandboxUpdateOpsController::WriteSandbox(api::Object sandbox) {
  ASSIGN_OR_RETURN(api::Object written, store_.Update(std::move(sandbox)));
  sandboxes_.WaitForRevision(written.metadata.resource_version,
                             std::chrono::duration_cast<std::chrono::milliseconds>(kCacheWait));
  return Status::Ok();
}

Status SandboxUpdateOpsController::Finalize(api::Object ops) {
  if (!ops.HasFinalizer(api::finalizers::kSandboxUpdateOps)) return Status::Ok();
  for (const auto& s : sandboxes_.List()) {
    if (s->metadata.namespace_ != ops.metadata.namespace_ ||
        LabelOf(*s, kUpdateOps) != ops.metadata.name) {
      continue;
    }
    api::Object copy = *s;
    copy.metadata.labels.erase(kUpdateOps);
    copy.metadata.labels.erase(kUpgradeFailed);
    Status s_written = WriteSandbox(std::move(copy));
    if (!s_written.ok() && s_written.code() != StatusCode::kNotFound) return s_written;
  }
  ops.RemoveFinalizer(api::finalizers::kSandboxUpdateOps);
  auto written = store_.Update(std::move(ops));
  if (!written.ok() && written.status().code() != StatusCode::kNotFound) return written.status();
  return Status::Ok();
}

Status SandboxUpdateOpsController::Reconcile(const std::string& key) {
  const auto parts = api::SplitKey(key);
  const std::string& ns = parts.first;
  const std::string& name = parts.second;
  auto got = store_.Get(api::SandboxUpdateOpsKind(), ns, name);
  if (!got.ok()) return got.status().code() == StatusCode::kNotFound ? Status::Ok() : got.status();
  api::Object ops = std::move(got).value();
  if (ops.metadata.deletion_timestamp) return Finalize(std::move(ops));
  if (ops.AddFinalizer(api::finalizers::kSandboxUpdateOps)) {
    ASSIGN_OR_RETURN(ops, store_.Update(std::move(ops)));
  }
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::SandboxUpdateOpsSpec>(ops));
  ASSIGN_OR_RETURN(auto status, api::DecodeStatus<api::SandboxUpdateOpsStatus>(ops));
  const base::WallTime now = clock_.Now();
  const std::string was = status.phase.empty() ? phase::kPending : status.phase;
  const bool spec_changed = status.observed_generation != ops.metadata.generation;
  status.observed_generation = ops.metadata.generation;

  auto write_status = [&]() -> Status {
    api::Object before = ops;
    api::EncodeStatus(status, ops);
    if (std::as_const(ops).status() == std::as_const(before).status()) return Status::Ok();
    auto written = store_.UpdateStatus(ops);
    if (!written.ok()) {
      if (written.status().code() == StatusCode::kNotFound) return Status::Ok();
      return written.status();  // a conflict with an edit: again, from the new state
    }
    // The next ops of the namespace looked at must see this one's phase (OtherCameFirst).
    ops_.WaitForRevision(written->metadata.resource_version,
                         std::chrono::duration_cast<std::chrono::milliseconds>(kCacheWait));
    return Status::Ok();
  };

  // One active ops per namespace: the younger of two gives way before touching anything.
  std::string older_active, other_active;
  for (const auto& o : ops_.List()) {
    if (o->metadata.namespace_ != ns || o->metadata.uid == ops.metadata.uid || !Active(*o)) {
      continue;
    }
    other_active = o->metadata.name;
    if (OtherCameFirst(*o, ops)) older_active = o->metadata.name;
  }
  const bool terminal = was == phase::kCompleted || was == phase::kFailed;
  if (!terminal && !older_active.empty()) {
    status.phase = phase::kFailed;
    std::string message = fmt::format(
        "SandboxUpdateOps \"{}\" is active in namespace \"{}\"; one runs at a time: delete this "
        "one and create it again when that one has finished",
        older_active, ns);
    api::SetCondition(status.conditions, {kProgressing, "False", "AnotherOpsActive", message}, now);
    Event(ops, true, "AnotherOpsActive", message);
    return write_status();
  }
  // A Completed ops goes on when an edit asks for more (a lower partition) and the namespace
  // is free; a Failed one never does.
  const bool resume_blocked = was == phase::kCompleted && spec_changed && !other_active.empty();
  const bool stopped =
      was == phase::kFailed || (was == phase::kCompleted && (!spec_changed || resume_blocked));

  // The members: every sandbox carrying our label, and while the ops may start more, every
  // one the selector and the state filter pick.
  ASSIGN_OR_RETURN(
      api::LabelSelector selector,
      api::ToLabelSelector(spec.selector.value_or(api::LabelSelectorSpec{}), "spec.selector"));
  std::vector<std::string> states =
      spec.state_filter ? spec.state_filter->states : std::vector<std::string>{};
  if (states.empty()) states = {api::sandbox_phase::kRunning};
  api::Json patch = api::Json::object();
  if (!spec.patch.text.empty()) {
    auto parsed = api::ParseJson(spec.patch.text);
    if (!parsed.ok()) return parsed.status().WithPrefix("spec.patch");
    patch = std::move(parsed).value();
  }
  TemplateLookup lookup = [this](std::string_view n, std::string_view t) {
    return templates_.Get(n, t);
  };
  std::vector<Member> members;
  for (auto& s : sandboxes_.List()) {
    if (s->metadata.namespace_ != ns || s->metadata.deletion_timestamp) continue;
    bool labelled = LabelOf(*s, kUpdateOps) == name;
    bool picked = false;
    if (!labelled && !stopped && selector.Matches(s->metadata.labels)) {
      const api::Json& raw = s->status();
      std::string p = raw.is_object() ? raw.value("phase", "") : "";
      picked = std::find(states.begin(), states.end(), p) != states.end();
    }
    if (labelled || picked) members.push_back(Classify(s, patch, lookup));
  }
  std::sort(members.begin(), members.end(), [](const Member& a, const Member& b) {
    return a.sandbox->metadata.name < b.sandbox->metadata.name;
  });

  RolloutInput input;
  for (const auto& m : members) input.members.push_back({m.sandbox->metadata.name, m.state});
  input.max_unavailable = spec.update_strategy.max_unavailable.value_or(api::IntOrString::Int(1));
  input.partition = spec.partition;
  input.paused = spec.paused;
  input.stopped = stopped;
  auto planned = PlanRollout(input);
  if (!planned.ok()) return planned.status().WithPrefix(name);
  RolloutPlan plan = std::move(planned).value();

  // One write per sandbox that needs one: started, finished or failed, or just labelled.
  Status first_error = Status::Ok();
  const Member* first_failure = nullptr;
  const std::string policy_type =
      spec.update_strategy.type.empty() ? "Recreate" : spec.update_strategy.type;
  for (auto& m : members) {
    const std::string& sbx = m.sandbox->metadata.name;
    const bool start = std::find(plan.start.begin(), plan.start.end(), sbx) != plan.start.end();
    api::Object s = *m.sandbox;
    auto& labels = s.metadata.labels;
    labels[kUpdateOps] = name;
    std::string success_event, failure_event;
    if (start && !m.target) {
      // Reached, but its template cannot be resolved or patched: it fails here.
      --plan.updating;
      ++plan.failed;
      m.state = UpdateState::kFailed;
      labels[kUpgradeFailed] = "true";
      failure_event = fmt::format("sandbox \"{}\" cannot be updated: {}", sbx, m.error);
    } else if (start) {
      api::Json& sp = s.spec();
      sp["template"] = m.target->patched;
      sp.erase("templateRef");
      if (m.target->from_template_ref && !m.target->volume_claim_templates.is_null()) {
        sp["volumeClaimTemplates"] = m.target->volume_claim_templates;
      }
      const api::Json& ops_spec = std::as_const(ops).spec();
      if (ops_spec.contains("lifecycle") && !ops_spec.at("lifecycle").is_null()) {
        sp["lifecycle"] = ops_spec.at("lifecycle");
      }
      sp["upgradePolicy"] = api::Json{{"type", policy_type}};
      labels.erase(kUpgradeFailed);
      const bool paused_now = m.sandbox_phase == api::sandbox_phase::kPaused ||
                              (sp.contains("paused") && sp.at("paused") == true);
      if (paused_now) s.metadata.annotations[kUpgradeResumeTrigger] = "true";
    } else if (m.state == UpdateState::kUpdated) {
      api::Json& sp = s.spec();
      if (sp.contains("upgradePolicy")) {
        sp.erase("upgradePolicy");
        success_event =
            fmt::format("sandbox \"{}\" updated to revision {}", sbx, m.target->target_revision);
      }
      s.metadata.annotations.erase(kUpgradeResumeTrigger);
    } else if (m.state == UpdateState::kFailed) {
      if (labels[kUpgradeFailed] != "true") {
        labels[kUpgradeFailed] = "true";
        failure_event = fmt::format("sandbox \"{}\" failed to update to revision {}: {}", sbx,
                                    m.target ? m.target->target_revision : "(none)", m.failure);
      }
      s.metadata.annotations.erase(kUpgradeResumeTrigger);
    }
    if (m.state == UpdateState::kFailed && first_failure == nullptr) first_failure = &m;
    if (s.metadata.labels == m.sandbox->metadata.labels &&
        s.metadata.annotations == m.sandbox->metadata.annotations &&
        std::as_const(s).spec() == m.sandbox->spec()) {
      continue;
    }
    Status written = WriteSandbox(std::move(s));
    if (!written.ok()) {
      if (start && m.target) --plan.updating;  // not started after all; the retry will
      if (first_error.ok() && written.code() != StatusCode::kNotFound) first_error = written;
      continue;
    }
    if (start && m.target) {
      Event(ops, false, "StartUpdateSandbox",
            fmt::format("sandbox \"{}\": revision {} → {}", sbx, m.target->current_revision,
                        m.target->target_revision));
    }
    if (!success_event.empty()) Event(ops, false, "SuccessfulUpdateSandbox", success_event);
    if (!failure_event.empty()) Event(ops, true, "FailedUpdateSandbox", failure_event);
  }

  status.replicas = plan.replicas;
  status.updated_replicas = plan.updated;
  status.updating_replicas = plan.updating;
  status.failed_replicas = plan.failed;
  if (was == phase::kFailed) {
    status.phase = phase::kFailed;  // a stopped rollout stays stopped; its counts go on
  } else if (plan.failed > 0 && first_failure != nullptr) {
    status.phase = phase::kFailed;
    std::string message =
        fmt::format("sandbox \"{}\" failed to update: {}; no further sandbox is started",
                    first_failure->sandbox->metadata.name, first_failure->failure);
    api::SetCondition(status.conditions, {kProgressing, "False", "SandboxUpdateFailed", message},
                      now);
    Event(ops, true, "UpdateOpsFailed", message);
  } else if (was == phase::kCompleted && stopped) {
    status.phase = phase::kCompleted;
    if (resume_blocked) {
      api::SetCondition(
          status.conditions,
          {kProgressing, "False", "AnotherOpsActive",
           fmt::format("not resumed: SandboxUpdateOps \"{}\" is active in namespace \"{}\"",
                       other_active, ns)},
          now);
    }
  } else if (plan.done) {
    status.phase = phase::kCompleted;
    std::string message =
        fmt::format("{} of {} selected sandboxes updated", plan.updated, plan.replicas);
    if (plan.partition > 0) message += fmt::format(" ({} kept by the partition)", plan.partition);
    api::SetCondition(status.conditions, {kProgressing, "False", "Completed", message}, now);
    if (was != phase::kCompleted) Event(ops, false, "UpdateOpsCompleted", message);
  } else {
    status.phase = plan.updated + plan.updating > 0 ? phase::kUpdating : phase::kPending;
    if (spec.paused) {
      api::SetCondition(status.conditions,
                        {kProgressing, "False", "Paused",
                         "spec.paused is set: sandboxes in flight finish, no new one is started"},
                        now);
    } else {
      api::SetCondition(status.conditions,
                        {kProgressing, "True", "Updating",
                         fmt::format("updating at most {} at a time", plan.max_unavailable)},
                        now);
    }
  }
  RETURN_IF_ERROR(write_status());
  return first_error;
}

}  // namespace warren::controller
