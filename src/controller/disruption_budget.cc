#include "controller/disruption_budget.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "api/label_selector.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "base/strings.h"

namespace warren::controller {
namespace {

// At most this many unit names in a message; the count says the rest.
constexpr size_t kNamesInMessage = 3;

std::string GroupOf(const api::Object& sandbox, const std::string& key) {
  auto it = sandbox.metadata.labels.find(key);
  if (it == sandbox.metadata.labels.end()) return "sandbox/" + sandbox.metadata.name;
  return it->second;
}

// "" when available, else why not.
std::string WhyUnavailable(const api::Object& sandbox, const api::SandboxStatus& status,
                           bool disrupted) {
  const std::string& name = sandbox.metadata.name;
  if (sandbox.metadata.deletion_timestamp) return fmt::format("sandbox {} is being deleted", name);
  if (disrupted) return fmt::format("sandbox {} is being evicted", name);
  if (status.phase != api::sandbox_phase::kRunning) {
    return fmt::format("sandbox {} is {}", name,
                       status.phase.empty() ? std::string("not started") : status.phase);
  }
  if (!api::IsConditionTrue(status.conditions, "Ready")) {
    return fmt::format("sandbox {} is not Ready", name);
  }
  return "";
}

std::string Constraint(const api::PodUnavailableBudgetSpec& spec, int32_t total, int32_t desired) {
  if (spec.max_unavailable) {
    const api::IntOrString& v = *spec.max_unavailable;
    if (!v.is_string) return fmt::format("maxUnavailable {}", v.int_value);
    return fmt::format("maxUnavailable {} ({} of {})", v.str_value, total - desired, total);
  }
  if (spec.min_available) {
    const api::IntOrString& v = *spec.min_available;
    if (!v.is_string) return fmt::format("minAvailable {}", v.int_value);
    return fmt::format("minAvailable {} ({} of {})", v.str_value, desired, total);
  }
  return "";
}

// "g2: sandbox g2-b is not Ready, g3: ..." for the first few unavailable units.
std::string DescribeUnavailable(const BudgetView& view) {
  std::vector<std::string> parts;
  std::vector<std::string> down = view.Unavailable();
  for (size_t i = 0; i < down.size() && i < kNamesInMessage; ++i) {
    const BudgetUnit& u = view.units.at(down[i]);
    parts.push_back(view.grouped() ? fmt::format("{}: {}", u.name, u.why) : u.why);
  }
  if (down.size() > kNamesInMessage) {
    parts.push_back(fmt::format("and {} more", down.size() - kNamesInMessage));
  }
  return base::Join(parts, ", ");
}

}  // namespace

bool IsFinishedPhase(std::string_view phase) {
  return phase == api::sandbox_phase::kSucceeded || phase == api::sandbox_phase::kFailed;
}

std::vector<std::string> BudgetView::Unavailable() const {
  std::vector<std::string> out;
  for (const auto& [name, unit] : units) {
    if (!unit.available) out.push_back(name);
  }
  return out;
}

Result<bool> BudgetSelects(const api::Object& budget, const api::Object& sandbox) {
  if (sandbox.metadata.namespace_ != budget.metadata.namespace_) return false;
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::PodUnavailableBudgetSpec>(budget));
  if (spec.target_ref) {
    const api::OwnerReference* ref = sandbox.ControllerRef();
    return ref != nullptr && ref->kind == "SandboxSet" && ref->name == spec.target_ref->name;
  }
  if (!spec.selector) return false;
  ASSIGN_OR_RETURN(api::LabelSelector selector,
                   api::ToLabelSelector(*spec.selector, "spec.selector"));
  return selector.Matches(sandbox.metadata.labels);
}

Result<BudgetView> EvaluateBudget(const api::Object& budget,
                                  const std::vector<const api::Object*>& sandboxes,
                                  std::optional<int32_t> target_replicas, base::WallTime now,
                                  bool prune) {
  ASSIGN_OR_RETURN(auto spec, api::DecodeSpec<api::PodUnavailableBudgetSpec>(budget));
  ASSIGN_OR_RETURN(auto old, api::DecodeStatus<api::PodUnavailableBudgetStatus>(budget));
  BudgetView view;
  view.key = fmt::format("{}/{}", budget.metadata.namespace_, budget.metadata.name);
  if (spec.pod_group_policy) view.group_label_key = spec.pod_group_policy->group_label_key;
  api::PodUnavailableBudgetStatus& status = view.status;
  status.observed_generation = budget.metadata.generation;
  status.conditions = old.conditions;

  // Admitted evictions still counting.
  std::map<std::string, base::WallTime> disrupted;
  for (const auto& [name, at] : old.disrupted_pods) {
    if (now - at < kDisruptedSandboxTtl) disrupted.emplace(name, at);
  }

  std::set<std::string> present;  // every sandbox of the list in the namespace
  for (const api::Object* s : sandboxes) {
    if (s->metadata.namespace_ != budget.metadata.namespace_) continue;
    present.insert(s->metadata.name);
    ASSIGN_OR_RETURN(bool selected, BudgetSelects(budget, *s));
    if (!selected) continue;
    auto sbx_status = api::DecodeStatus<api::SandboxStatus>(*s);
    api::SandboxStatus st = sbx_status.ok() ? *sbx_status : api::SandboxStatus{};
    if (IsFinishedPhase(st.phase)) continue;
    std::string unit_name = view.grouped() ? GroupOf(*s, view.group_label_key) : s->metadata.name;
    BudgetUnit& unit = view.units[unit_name];
    if (unit.name.empty()) {
      unit.name = unit_name;
      unit.available = true;
    }
    unit.members.push_back(s->metadata.name);
    view.unit_of[s->metadata.name] = unit_name;
    std::string why = WhyUnavailable(*s, st, disrupted.contains(s->metadata.name));
    if (!why.empty() && unit.available) {
      unit.available = false;
      unit.why = std::move(why);
    }
  }
  // An admitted eviction of a sandbox no longer listed: gone (or finished) — with `prune` its
  // deletion has been seen and it stops counting; else it still takes its unit's slot.
  for (auto it = disrupted.begin(); it != disrupted.end();) {
    const std::string& name = it->first;
    if (view.unit_of.contains(name)) {
      ++it;
      continue;
    }
    if (prune && !present.contains(name)) {
      it = disrupted.erase(it);
      continue;
    }
    if (!view.grouped() && !present.contains(name)) {
      BudgetUnit& unit = view.units[name];
      unit.name = name;
      unit.available = false;
      unit.why = fmt::format("sandbox {} was evicted", name);
    }
    ++it;
  }
  if (view.grouped()) {
    const auto& size = spec.pod_group_policy->group_size;
    for (auto& [name, unit] : view.units) {
      std::sort(unit.members.begin(), unit.members.end());
      if (unit.available && size && static_cast<int32_t>(unit.members.size()) < *size) {
        unit.available = false;
        unit.why = fmt::format("{} of {} members there", unit.members.size(), *size);
      }
    }
    // A group recorded unavailable stays so until it is seen whole and available again. The
    // eviction route's view (no `prune`) cannot see that while an admitted eviction of a sandbox
    // now gone is not yet confirmed: that sandbox's group is not known any more, and the group
    // must not look whole without it, so every recorded group stays down until the controller
    // has seen the deletion.
    bool unconfirmed = false;
    for (const auto& [name, at] : disrupted) {
      if (!prune && !present.contains(name)) unconfirmed = true;
    }
    for (const auto& [name, since] : old.unavailable_pod_groups) {
      auto it = view.units.find(name);
      if (it == view.units.end()) {
        if (!unconfirmed) continue;  // no member left: the group is gone
        BudgetUnit& unit = view.units[name];
        unit.name = name;
        unit.available = false;
        unit.why = "a member's eviction is not yet seen through";
        status.unavailable_pod_groups.emplace(name, since);
        continue;
      }
      if (!it->second.available) {
        status.unavailable_pod_groups.emplace(name, since);
      } else if (unconfirmed) {
        it->second.available = false;
        it->second.why = "a member's eviction is not yet seen through";
        status.unavailable_pod_groups.emplace(name, since);
      }
    }
    for (const auto& [name, unit] : view.units) {
      if (!unit.available) status.unavailable_pod_groups.emplace(name, now);  // keeps an older
    }
  }
  status.disrupted_pods = std::move(disrupted);

  int32_t units = static_cast<int32_t>(view.units.size());
  int32_t total = units;
  if (target_replicas && !view.grouped()) total = *target_replicas;
  int32_t current = 0;
  for (const auto& [name, unit] : view.units) current += unit.available ? 1 : 0;
  int32_t desired = 0;
  if (spec.max_unavailable) {
    ASSIGN_OR_RETURN(int64_t n, spec.max_unavailable->Scaled(total, /*round_up=*/true));
    desired = static_cast<int32_t>(std::max<int64_t>(0, total - n));
  } else if (spec.min_available) {
    ASSIGN_OR_RETURN(int64_t n, spec.min_available->Scaled(total, /*round_up=*/true));
    desired = static_cast<int32_t>(n);
  }
  status.total_replicas = total;
  status.current_available = current;
  status.desired_available = desired;
  status.unavailable_allowed = std::max(0, current - desired);
  view.constraint = Constraint(spec, total, desired);

  api::Condition cond;
  cond.type = "DisruptionAllowed";
  cond.observed_generation = status.observed_generation;
  std::string words = view.grouped() ? "group(s)" : "sandbox(es)";
  if (status.unavailable_allowed > 0) {
    cond.status = "True";
    cond.reason = "SufficientPods";
    cond.message = fmt::format("{} of {} {} available, {} needed ({}): {} may be evicted", current,
                               total, words, desired, view.constraint, status.unavailable_allowed);
  } else {
    cond.status = "False";
    cond.reason = "InsufficientPods";
    std::string down = DescribeUnavailable(view);
    cond.message =
        fmt::format("{} of {} {} available, {} needed ({}){}", current, total, words, desired,
                    view.constraint, down.empty() ? "" : fmt::format("; unavailable: {}", down));
  }
  api::SetCondition(status.conditions, cond, now);
  return view;
}

EvictionVerdict JudgeEviction(const BudgetView& view, const api::Object& sandbox) {
  EvictionVerdict v;
  auto it = view.unit_of.find(sandbox.metadata.name);
  if (it == view.unit_of.end()) {
    v.allowed = true;
    v.message = fmt::format("the budget does not count sandbox {}", sandbox.metadata.name);
    return v;
  }
  const BudgetUnit& unit = view.units.at(it->second);
  if (!unit.available) {
    // Already down: its eviction uses nothing. A group is still recorded, so that it stays
    // unavailable once this member is gone (until the controller sees it whole again).
    v.allowed = true;
    v.record = view.grouped();
    v.message =
        fmt::format("{} {} is already unavailable ({})", view.unit_word(), unit.name, unit.why);
    return v;
  }
  if (view.status.unavailable_allowed > 0) {
    v.allowed = true;
    v.record = true;
    return v;
  }
  const int32_t down = view.status.total_replicas - view.status.current_available;
  std::string which = DescribeUnavailable(view);
  v.message = fmt::format(
      "Cannot evict sandbox as it would violate the sandbox's disruption budget {}: {} {} of {} "
      "would be unavailable, {} {} already unavailable{}, {}",
      view.key, view.unit_word(), unit.name, view.status.total_replicas, std::max(0, down),
      view.grouped() ? "group(s)" : "sandbox(es)", which.empty() ? "" : fmt::format(" ({})", which),
      view.constraint);
  return v;
}

api::PodUnavailableBudgetStatus EvictionStatus(const BudgetView& view, const api::Object& sandbox,
                                               base::WallTime now) {
  api::PodUnavailableBudgetStatus status = view.status;
  const std::string& name = sandbox.metadata.name;
  status.disrupted_pods[name] = now;
  auto it = view.unit_of.find(name);
  if (it == view.unit_of.end()) return status;
  const BudgetUnit& unit = view.units.at(it->second);
  if (view.grouped()) status.unavailable_pod_groups.emplace(unit.name, now);
  if (unit.available) {
    status.current_available = std::max(0, status.current_available - 1);
    status.unavailable_allowed = std::max(0, status.current_available - status.desired_available);
  }
  return status;
}

void EncodeBudgetStatus(const api::PodUnavailableBudgetStatus& status, api::Object& budget) {
  api::EncodeStatus(status, budget);
  api::Json& out = budget.status();
  out["unavailableAllowed"] = status.unavailable_allowed;
  out["currentAvailable"] = status.current_available;
  out["desiredAvailable"] = status.desired_available;
  out["totalReplicas"] = status.total_replicas;
}

std::optional<base::WallTime> NextExpiry(const api::PodUnavailableBudgetStatus& status) {
  std::optional<base::WallTime> next;
  for (const auto& [name, at] : status.disrupted_pods) {
    base::WallTime expiry = at + kDisruptedSandboxTtl;
    if (!next || expiry < *next) next = expiry;
  }
  return next;
}

}  // namespace warren::controller
