#pragma once

#include "api/json.h"
#include "base/result.h"

namespace warren::api {

// JSON merge patch (RFC 7386): objects merge recursively, `null` removes a key, anything else
// (arrays included) replaces. A patch that is not an object replaces the target wholesale.
void ApplyMergePatch(Json& target, const Json& patch);

// The merge patch that turns `from` into `to` (RFC 7386 §3 in reverse): removed keys become
// null, changed values are taken from `to`, nested objects recurse.
Json CreateMergePatch(const Json& from, const Json& to);

}  // namespace warren::api
