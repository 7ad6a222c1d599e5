#pragma once

// The documents the rollout verbs send (`warren set image`, `warren create suo`), built by pure
// functions so their rules are tested without a server.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "base/result.h"

namespace warren::cli {

// One "[CONTAINER=]IMAGE" argument; `container` is "" when the argument names none.
struct ImageArg {
  std::string container;
  std::string image;
};
Result<std::vector<ImageArg>> ParseImageArgs(const std::vector<std::string>& args);

// The merge patch of a SandboxSet that sets those images in its inline template (a merge patch
// replaces lists, so it carries the whole containers list, changed). A bare IMAGE is for a
// template with one container. A set that uses spec.templateRef is refused, naming the
// SandboxTemplate: its template is not the set's to change. An unknown container is refused,
// naming the ones there are.
Result<api::Json> SetImagePatch(const api::Json& sandbox_set, const std::vector<ImageArg>& images);

struct UpdateOpsFlags {
  std::string selector;  // label-selector syntax, as -l
  std::string max_unavailable;
  std::string partition;
  bool paused = false;
};
// A SandboxUpdateOps (generateName "suo-") whose patch sets those images; every image must
// name its container. The selector becomes matchLabels / matchExpressions; one that
// SandboxUpdateOps cannot hold (`a>1`) is refused.
Result<api::Json> UpdateOpsForImages(const UpdateOpsFlags& flags,
                                     const std::vector<ImageArg>& images);

// "3" → 3, "20%" → "20%" (a Kubernetes IntOrString); anything else is InvalidArgument naming
// `flag`.
Result<api::Json> ParseIntOrPercent(std::string_view text, std::string_view flag);

}  // namespace warren::cli
