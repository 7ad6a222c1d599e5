#pragma once

#include <string>
#include <vector>

#include "api/kinds.h"
#include "base/result.h"

namespace warren::cli {

// What `get`, `describe`, `delete` and `scale` were asked for: "sbs", "sbs,sbx", "sbs pool",
// "sbs/pool sbx/x". Unknown kind names → InvalidArgument naming them (kubectl's
// `the server doesn't have a resource type "foo"`).
struct ResourceRef {
  const api::KindInfo* kind = nullptr;
  std::string name;  // "" = every object of the kind
};
Result<std::vector<ResourceRef>> ParseResourceArgs(const api::KindRegistry& kinds,
                                                   const std::vector<std::string>& args);

}  // namespace warren::cli
