#pragma once

// What a SandboxUpdateOps gives one sandbox: its effective pod template (the inline
// spec.template, or the template of the SandboxTemplate its spec.templateRef names, in the
// same namespace — the rule the node agent follows, node/template_resolver.cc), that template
// with the ops' patch applied, and both revisions (api::PodTemplateHash, which the node writes
// to status.updateRevision). Pure functions over documents; the SandboxTemplate comes from a
// lookup the caller provides (an informer's cache).

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "api/json.h"
#include "api/object.h"
#include "base/result.h"

namespace warren::controller {

// The SandboxTemplate `name` of `namespace_`, or null when there is none.
using TemplateLookup = std::function<std::shared_ptr<const api::Object>(std::string_view namespace_,
                                                                        std::string_view name)>;

struct UpdateTarget {
  api::Json patched;  // the PodTemplateSpec document to write to spec.template
  // The SandboxTemplate's volumeClaimTemplates, when the sandbox names one through templateRef
  // and has none of its own: inlining the template must keep them.
  api::Json volume_claim_templates;
  bool from_template_ref = false;
  std::string current_revision;  // of the template the sandbox names now
  std::string target_revision;   // of `patched`; re-patching `patched` gives the same
};

// The sandbox's update target under `patch` (a strategic-merge patch, api/strategic_merge.h).
// A sandbox without a usable template, a missing SandboxTemplate or a patch that makes the
// template invalid is FailedPrecondition / InvalidArgument with a message naming what.
Result<UpdateTarget> ResolveUpdateTarget(const api::Object& sandbox, const api::Json& patch,
                                         const TemplateLookup& lookup);

}  // namespace warren::controller
