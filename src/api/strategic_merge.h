#pragma once

// The strategic-merge patch of a PodTemplateSpec, as far as Warren's templates need it
// (SandboxUpdateOps spec.patch, reference/openkruise-agents.md §1.5). Kubernetes' rules, cut to
// the fields a sandbox template has:
//   - objects merge recursively; a `null` value deletes the key;
//   - the lists spec.containers, spec.initContainers and spec.volumes merge by their `name`:
//     an item of the patch is merged into the target's item of the same name, or appended
//     when there is none; an item {"name": N, "$patch": "delete"} removes N;
//   - every other list (command, args, env, ports, ...) is replaced whole, as is any scalar.
// api/merge_patch.h is plain RFC 7386 (every list replaced), which would drop the other
// containers of a pod when a patch names one.

#include "api/json.h"
#include "base/result.h"
#include "base/status.h"

namespace warren::api {

// Applies `patch` (an object) to `pod_template` (a PodTemplateSpec document: metadata, spec).
// A patch that is not an object, or a keyed list item without a string `name`, is
// InvalidArgument naming the path; `pod_template` is then left unchanged.
[[nodiscard]] Status ApplyPodTemplateStrategicMerge(Json& pod_template, const Json& patch);

}  // namespace warren::api
