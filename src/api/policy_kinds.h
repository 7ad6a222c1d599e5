#pragma once

#include "api/kinds.h"
#include "api/object.h"
#include "base/status.h"

namespace warren::api {

// The policy.kruise.io group: PodUnavailableBudget (pub; api/types/pod_unavailable_budget.h),
// registered with the built-in kinds by RegisterBuiltinKinds.
inline constexpr const char* kPolicyGroup = "policy.kruise.io";
inline constexpr const char* kPolicyApiVersion = "policy.kruise.io/v1alpha1";

const KindInfo& PodUnavailableBudgetKind();

// Its admission hooks (policy_admission.cc).
Status AdmitPodUnavailableBudget(Object& object);
Status AdmitPodUnavailableBudgetUpdate(const Object& old_object, const Object& new_object);
Status AdmitPodUnavailableBudgetStatus(Object& object);

}  // namespace warren::api
