#include "controller/traffic_policy_controller.h"

#include <fmt/format.h>

#include <map>

#include "api/kinds.h"
#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/traffic_policy.h"
#include "base/clock.h"
#include "base/log.h"

namespace warren::controller {
namespace {

auto Log() {
  static auto logger = base::Logger("traffic-policy");
  return logger;
}

std::string AnnotationOf(const api::Object& o) {
  auto it = o.metadata.annotations.find(api::annotations::kTrafficPolicy);
  return it == o.metadata.annotations.end() ? "" : it->second;
}

// What one policy means for the sandboxes it selects.
struct Judged {
  api::LabelSelector selector;
  sbnet::EgressPolicy egress;
  Status accepted;
  int32_t sandboxes = 0;
  ObjectPtr object;
};

Judged Judge(const ObjectPtr& p) {
  Judged j;
  j.object = p;
  auto spec = api::DecodeSpec<api::TrafficPolicySpec>(*p);
  if (!spec.ok()) {
    j.accepted = spec.status();
  } else if (spec->selector) {
    auto sel = api::ToLabelSelector(*spec->selector, "spec.selector");
    if (sel.ok()) {
      j.selector = std::move(*sel);
    } else {
      j.accepted = sel.status();
    }
  }
  if (j.accepted.ok()) {
    auto egress = EgressOfTrafficPolicy(*p);
    if (egress.ok()) {
      j.egress = std::move(*egress);
    } else {
      j.accepted = egress.status();
    }
  }
  if (!j.accepted.ok()) j.egress = sbnet::EgressPolicy{.allow_internet = false};  // fail closed
  return j;
}

}  // namespace

Result<sbnet::EgressPolicy> EgressOfTrafficPolicy(const api::Object& policy) {
  ASSIGN_OR_RETURN(api::TrafficPolicySpec spec, api::DecodeSpec<api::TrafficPolicySpec>(policy));
  std::vector<std::string> allow;
  std::vector<std::string> deny;
  if (spec.egress) {
    for (size_t i = 0; i < spec.egress->rules.size(); ++i) {
      const auto& rule = spec.egress->rules[i];
      for (size_t k = 0; k < rule.to.size(); ++k) {
        const auto& peer = rule.to[k];
        std::string entry = peer.cidr.empty() ? peer.fqdn : peer.cidr;
        std::string path = fmt::format("spec.egress.rules[{}].to[{}]", i, k);
        if (entry.empty()) {
          return InvalidArgumentError(
              fmt::format("{}: only cidr and fqdn peers are enforced", path));
        }
        bool allows = rule.action == "allow";
        if (!allows && rule.action != "reject") {
          return InvalidArgumentError(fmt::format(
              "spec.egress.rules[{}].action: \"{}\" is neither allow nor reject", i, rule.action));
        }
        // One entry at a time, so the error names the peer rather than a list position.
        auto one = allows ? sbnet::MakeEgressPolicy(true, {entry}, {})
                          : sbnet::MakeEgressPolicy(true, {}, {entry});
        if (!one.ok()) {
          std::string why(one.status().message());
          if (auto colon = why.find(": "); colon != std::string::npos) why = why.substr(colon + 2);
          return InvalidArgumentError(fmt::format("{}: {}", path, why));
        }
        (allows ? allow : deny).push_back(entry);
      }
    }
  }
  return sbnet::MakeEgressPolicy(true, allow, deny);
}

TrafficPolicyController::TrafficPolicyController(store::Store& store)
    : store_(store),
      policies_(store, {.kind = &api::TrafficPolicyKind(), .name = "trafficpolicies"}),
      sandboxes_(store, {.kind = &api::SandboxKind(), .name = "traffic-policy sandboxes"}) {
  policies_.AddHandler([this](const Informer::Change& c) { OnPolicy(c); });
  sandboxes_.AddHandler([this](const Informer::Change& c) { OnSandbox(c); });
}

TrafficPolicyController::~TrafficPolicyController() { Stop(); }

Status TrafficPolicyController::Start() {
  // Sandboxes first: the policies' initial adds then find them in the cache.
  RETURN_IF_ERROR(sandboxes_.Start());
  RETURN_IF_ERROR(policies_.Start());
  worker_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void TrafficPolicyController::Stop() {
  queue_.ShutDown();
  if (worker_.joinable()) worker_.join();
  policies_.Stop();
  sandboxes_.Stop();
}

void TrafficPolicyController::OnPolicy(const Informer::Change& c) {
  if (c.old && c.type == store::EventType::kModified &&
      c.old->metadata.generation == c.object->metadata.generation &&
      c.old->metadata.deletion_timestamp == c.object->metadata.deletion_timestamp) {
    return;  // its own status write
  }
  queue_.Add(c.object->metadata.namespace_);
}

void TrafficPolicyController::OnSandbox(const Informer::Change& c) {
  const api::Object& o = *c.object;
  const bool deleted = c.type == store::EventType::kDeleted;
  // Most events are status writes: neither labels nor the annotation moved, nothing to do.
  if (!deleted && c.old && c.old->metadata.labels == o.metadata.labels &&
      AnnotationOf(*c.old) == AnnotationOf(o)) {
    return;
  }
  // A namespace without policies has nothing to add; only a leftover annotation to remove.
  if (!deleted && !AnnotationOf(o).empty()) {
    queue_.Add(o.metadata.namespace_);
    return;
  }
  for (const auto& p : policies_.List()) {
    if (p->metadata.namespace_ == o.metadata.namespace_) {
      queue_.Add(o.metadata.namespace_);  // what it selects (and so the counts) may change
      return;
    }
  }
}

void TrafficPolicyController::Run() {
  while (auto ns = queue_.Get()) {
    Status s = Reconcile(*ns);
    ++reconciles_;
    if (s.ok()) {
      queue_.Forget(*ns);
    } else {
      Log()->warn("namespace={} reconcile failed, retrying: {}", *ns, s.ToString());
      queue_.AddWithBackoff(*ns);
    }
    queue_.Done(*ns);
  }
}

Status TrafficPolicyController::Reconcile(const std::string& ns) {
  std::vector<Judged> judged;
  for (const auto& p : policies_.List()) {
    if (p->metadata.namespace_ == ns && !p->metadata.deletion_timestamp) judged.push_back(Judge(p));
  }
  Status result;
  for (const auto& s : sandboxes_.List()) {
    if (s->metadata.namespace_ != ns || s->metadata.deletion_timestamp) continue;
    std::optional<sbnet::EgressPolicy> merged;
    std::vector<Judged*> selecting;
    for (auto& j : judged) {
      if (!j.selector.Matches(s->metadata.labels)) continue;
      ++j.sandboxes;
      selecting.push_back(&j);
      merged = merged ? sbnet::MergeEgressPolicies(*merged, j.egress) : j.egress;
    }
    std::string want;
    if (merged) {
      nlohmann::json form = sbnet::EgressPolicyToJson(*merged);
      // Together they must still be a policy the node takes (list limits); else closed, and
      // said.
      if (auto taken = sbnet::EgressPolicyFromJson(form); !taken.ok()) {
        for (Judged* j : selecting) {
          if (j->accepted.ok()) {
            j->accepted =
                InvalidArgumentError(fmt::format("with the other policies selecting sandbox {}: {}",
                                                 s->metadata.name, taken.status().message()));
          }
        }
        form = sbnet::EgressPolicyToJson(sbnet::EgressPolicy{.allow_internet = false});
      }
      want = form.dump();
    }
    if (want == AnnotationOf(*s)) continue;
    api::Json value = want.empty() ? api::Json(nullptr) : api::Json(want);
    api::Json patch = {
        {"metadata", {{"annotations", {{api::annotations::kTrafficPolicy, value}}}}}};
    auto patched = store_.Patch(api::SandboxKind(), ns, s->metadata.name, patch);
    if (!patched.ok() && patched.status().code() != StatusCode::kNotFound) {
      result = patched.status();
      continue;
    }
    Log()->info("sandbox egress from traffic policies sandbox={}/{} policy={}", ns,
                s->metadata.name, want.empty() ? "none" : want);
  }
  for (const auto& j : judged) {
    api::TrafficPolicyStatus status;
    status.observed_generation = j.object->metadata.generation;
    status.sandboxes = j.sandboxes;
    api::Condition accepted;
    accepted.type = "Accepted";
    accepted.status = j.accepted.ok() ? "True" : "False";
    accepted.reason = j.accepted.ok() ? "Enforced" : "Invalid";
    accepted.message = j.accepted.ok()
                           ? "in force on the sandboxes it selects"
                           : fmt::format("not enforceable, so its sandboxes' egress is closed: {}",
                                         j.accepted.message());
    accepted.observed_generation = status.observed_generation;
    auto old = api::DecodeStatus<api::TrafficPolicyStatus>(*j.object);
    if (old.ok() && old->observed_generation == status.observed_generation &&
        old->sandboxes == status.sandboxes && old->conditions.size() == 1 &&
        old->conditions[0].status == accepted.status &&
        old->conditions[0].message == accepted.message) {
      continue;
    }
    accepted.last_transition_time = base::RealClock().Now();
    status.conditions = {accepted};
    api::Object o = *j.object;
    api::EncodeStatus(status, o);
    api::Json patch = {{"status", o.status()}};
    auto written = store_.Patch(api::TrafficPolicyKind(), ns, o.metadata.name, patch,
                                store::Subresource::kStatus);
    if (!written.ok() && written.status().code() != StatusCode::kNotFound)
      result = written.status();
  }
  return result;
}

}  // namespace warren::controller
