#pragma once

#include <string>

#include "api/object.h"
#include "base/result.h"
#include "sbnet/egress_policy.h"

namespace warren::node {

// The Sandbox's kNetwork annotation as written ("" when absent), and the policy it states
// (every destination the node allows when absent). InvalidArgument naming the annotation and
// what is wrong in it.
std::string NetworkAnnotationOf(const api::Object& sandbox);
Result<sbnet::EgressPolicy> EgressPolicyOf(const api::Object& sandbox);

}  // namespace warren::node
