#pragma once

#include <map>
#include <string>

#include "api/object.h"

namespace warren::store::testing {

// A valid Sandbox in namespace `ns` with an inline template (image "base").
api::Object MakeSandbox(std::string name, std::map<std::string, std::string> labels = {},
                        std::string ns = "default");
// A valid SandboxSet with `replicas`.
api::Object MakeSandboxSet(std::string name, int replicas = 1, std::string ns = "default");

}  // namespace warren::store::testing
