#pragma once

#include <string>

#include "api/json.h"
#include "api/object.h"
#include "base/result.h"

namespace warren::controller {

// One revision of a SandboxSet's template. Members are made from it: each one's spec.templateRef
// names the materialized SandboxTemplate `<sbs>-<hash>` (owned by the set), so a member stays
// small and every member of a revision is made from exactly the same thing.
struct TemplateRevision {
  std::string hash;           // FNV-32a of the canonical JSON of `template_spec`, 8 hex digits
  std::string template_name;  // "<sbs>-<hash>"
  api::Json template_spec;    // SandboxTemplate spec: template, persistentContents, runtimes,
                              // pauseStrategy (fields a member is made from; unknown ones kept)
  // The snapshot (Checkpoint) the referenced template restores from (its
  // agents.kruise.io/restore-from annotation): every member starts on its files. Part of the
  // hash, so pointing the template at another snapshot rolls the pool.
  std::string restore_from;
};

// The set's current revision. With spec.templateRef the referenced SandboxTemplate's template
// is copied in (`referenced` is it; nullptr when the set has an inline template), so editing
// the referenced template rolls the pool like editing an inline one. A set whose templateRef
// names nothing → FailedPrecondition (from the caller, which knows the lookup failed).
TemplateRevision ComputeRevision(const api::Object& set, const api::Object* referenced);

// The SandboxTemplate object materializing `revision`, owned by `set` (deleted with it).
api::Object MakeRevisionTemplate(const api::Object& set, const TemplateRevision& revision);

}  // namespace warren::controller
