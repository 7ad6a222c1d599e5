#pragma once

#include "api/json.h"

namespace warren::cli {

// The merge patch `warren apply` sends for an object that exists, kubectl's three-way rule:
// fields of `desired` that differ from `live` are set; fields that were in `last_applied` (the
// previous apply) but are no longer in `desired` are removed; fields only `live` has (set by the
// server, controllers or other tools) are left alone. Returns an empty object when nothing needs
// to change. `last_applied` may be null (never applied).
api::Json ThreeWayMergePatch(const api::Json& last_applied, const api::Json& desired,
                             const api::Json& live);

}  // namespace warren::cli
