// Defaulting and validation of policy.kruise.io/v1alpha1 PodUnavailableBudget, following Kruise's
// webhook (pkg/webhook/podunavailablebudget/validating; openkruise-core.md §4.1) and the group
// policy of its PR #2278 (§4.4), without the rules that only bind pods to budgets through
// annotations (Warren finds a sandbox's budgets by selector at eviction time).

#include <fmt/format.h>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/policy_kinds.h"
#include "api/typed_codec.h"
#include "api/types/pod_unavailable_budget.h"

namespace warren::api {
namespace {

// A non-negative integer or a percentage 0%..100% (Kubernetes' ValidatePositiveIntOrPercent plus
// the upper bound Kruise adds).
void ValidateIntOrPercent(const IntOrString& v, const std::string& path, FieldErrors& errors) {
  if (!v.is_string) {
    if (v.int_value < 0) {
      errors.Add(path,
                 fmt::format("Invalid value: {}: must be greater than or equal to 0", v.int_value));
    }
    return;
  }
  auto percent = v.Scaled(100, false);
  if (!percent.ok() || *percent < 0 || *percent > 100) {
    errors.Add(path, fmt::format("Invalid value: \"{}\": must be an integer or a percentage "
                                 "between 0% and 100% (e.g. \"30%\")",
                                 v.str_value));
  }
}

}  // namespace

Status AdmitPodUnavailableBudget(Object& object) {
  ASSIGN_OR_RETURN(PodUnavailableBudgetSpec spec, DecodeSpec<PodUnavailableBudgetSpec>(object));
  FieldErrors errors;
  if (spec.selector.has_value() == spec.target_ref.has_value()) {
    errors.Add("spec", "Invalid value: exactly one of selector and targetRef must be set");
  }
  if (spec.selector) {
    if (spec.selector->match_labels.empty() && spec.selector->match_expressions.empty()) {
      errors.Add("spec.selector",
                 "Invalid value: {}: an empty selector would select every "
                 "sandbox of the namespace; use targetRef or name labels");
    } else if (auto sel = ToLabelSelector(*spec.selector, "spec.selector"); !sel.ok()) {
      errors.Add("spec.selector", std::string(sel.status().message()));
    }
  }
  if (spec.target_ref) {
    PubTargetReference& ref = *spec.target_ref;
    if (ref.api_version.empty()) ref.api_version = kAgentsApiVersion;
    if (ref.api_version != kAgentsApiVersion) {
      errors.Unsupported("spec.targetRef.apiVersion", ref.api_version, {kAgentsApiVersion});
    }
    if (ref.kind.empty()) {
      errors.Required("spec.targetRef.kind");
    } else if (ref.kind != "SandboxSet") {
      errors.Unsupported("spec.targetRef.kind", ref.kind, {"SandboxSet"});
    }
    if (ref.name.empty()) {
      errors.Required("spec.targetRef.name");
    } else if (auto err = CheckDns1123Subdomain(ref.name)) {
      errors.Add("spec.targetRef.name", *err);
    }
  }
  if (spec.max_unavailable.has_value() == spec.min_available.has_value()) {
    errors.Add("spec", "Invalid value: exactly one of maxUnavailable and minAvailable must be set");
  }
  if (spec.max_unavailable) {
    ValidateIntOrPercent(*spec.max_unavailable, "spec.maxUnavailable", errors);
  }
  if (spec.min_available) ValidateIntOrPercent(*spec.min_available, "spec.minAvailable", errors);
  if (spec.pod_group_policy) {
    const PodGroupPolicy& g = *spec.pod_group_policy;
    if (g.group_label_key.empty()) {
      errors.Required("spec.podGroupPolicy.groupLabelKey");
    } else if (auto err = CheckQualifiedName(g.group_label_key)) {
      errors.Add("spec.podGroupPolicy.groupLabelKey", *err);
    }
    if (g.group_size && *g.group_size < 1) {
      errors.Add(
          "spec.podGroupPolicy.groupSize",
          fmt::format("Invalid value: {}: must be greater than or equal to 1", *g.group_size));
    }
  }
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

// What a budget protects is fixed at creation, as Kruise's webhook has it: changing it under
// admitted evictions would count them against sandboxes they were not admitted for.
Status AdmitPodUnavailableBudgetUpdate(const Object& old_object, const Object& new_object) {
  FieldErrors errors;
  for (const char* field : {"selector", "targetRef", "podGroupPolicy"}) {
    auto part = [field](const Object& o) {
      const Json& spec = o.spec();
      return spec.is_object() && spec.contains(field) ? spec[field] : Json();
    };
    if (part(old_object) != part(new_object)) {
      errors.Add(ChildPath("spec", field), "Invalid value: field is immutable");
    }
  }
  return errors.ToStatus();
}

Status AdmitPodUnavailableBudgetStatus(Object& object) {
  return DecodeStatus<PodUnavailableBudgetStatus>(object).status();
}

}  // namespace warren::api
