#include "api/types/common.h"

#include <algorithm>

namespace warren::api {

Result<LabelSelector> ToLabelSelector(const LabelSelectorSpec& spec, std::string_view path) {
  std::vector<LabelSelector::Expression> exprs;
  for (const auto& e : spec.match_expressions) exprs.push_back({e.key, e.op, e.values});
  return LabelSelector::FromParts(spec.match_labels, exprs, path);
}

bool SetCondition(std::vector<Condition>& conditions, Condition condition, base::WallTime now) {
  auto it = std::find_if(conditions.begin(), conditions.end(),
                         [&](const Condition& c) { return c.type == condition.type; });
  if (it == conditions.end()) {
    if (!condition.last_transition_time) condition.last_transition_time = now;
    conditions.push_back(std::move(condition));
    return true;
  }
  bool changed = false;
  if (it->status != condition.status) {
    it->status = condition.status;
    it->last_transition_time = condition.last_transition_time.value_or(now);
    changed = true;
  }
  auto assign = [&](auto& field, auto& value) {
    if (field != value) {
      field = std::move(value);
      changed = true;
    }
  };
  assign(it->reason, condition.reason);
  assign(it->message, condition.message);
  assign(it->observed_generation, condition.observed_generation);
  return changed;
}

const Condition* FindCondition(const std::vector<Condition>& conditions, std::string_view type) {
  for (const auto& c : conditions) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

bool IsConditionTrue(const std::vector<Condition>& conditions, std::string_view type) {
  const Condition* c = FindCondition(conditions, type);
  return c != nullptr && c->status == "True";
}

}  // namespace warren::api
