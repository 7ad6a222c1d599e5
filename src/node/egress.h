#pragma once

#include <string>

#include "api/object.h"
#include "base/result.h"
#include "sbnet/egress_policy.h"

namespace warren::node {

// The Sandbox's egress annotations as written: kNetwork (E2B's network fields) and
// kTrafficPolicy (its TrafficPolicies'), "" when both are absent; the node re-applies the
// policy when this text changes.
std::string EgressAnnotationsOf(const api::Object& sandbox);
// The policy they state together (sbnet::MergeEgressPolicies; every destination the node
// allows when both are absent). InvalidArgument naming the annotation and what is wrong in it.
Result<sbnet::EgressPolicy> EgressPolicyOf(const api::Object& sandbox);

}  // namespace warren::node
