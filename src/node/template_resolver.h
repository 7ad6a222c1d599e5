#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"
#include "node/failure.h"
#include "store/store.h"

namespace warren::node {

// The template a Sandbox runs: its inline spec.template, or the SandboxTemplate its
// spec.templateRef names in the same namespace.
struct ResolvedTemplate {
  api::PodTemplateSpec pod;
  std::string restart_policy;  // template.spec.restartPolicy as written (not modelled in api/)
  std::string source;          // "inline" or "SandboxTemplate/<name>", for messages
  // The Sandbox's volumeClaimTemplates, else its SandboxTemplate's.
  std::vector<api::VolumeClaimTemplate> claims;
};

struct TemplateOutcome {
  std::optional<ResolvedTemplate> resolved;
  Failure failure;  // when !resolved; a missing SandboxTemplate is not terminal (it may come)
};

// Reads the store (blocking).
TemplateOutcome ResolveTemplate(store::Store& store, const api::Object& sandbox);

}  // namespace warren::node
