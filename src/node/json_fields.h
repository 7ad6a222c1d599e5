#pragma once

#include <initializer_list>
#include <string_view>

#include "api/json.h"

namespace warren::node {

// Whether `a` and `b` are equal once the top-level `ignored` keys are left out of both. Objects
// are compared field by field in place (no copy: the node runs this on every status write and
// every spec change of every sandbox); anything else is compared whole.
bool EqualExceptKeys(const api::Json& a, const api::Json& b,
                     std::initializer_list<std::string_view> ignored);

}  // namespace warren::node
