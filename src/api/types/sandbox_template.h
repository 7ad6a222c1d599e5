#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"

namespace warren::api {

// SandboxTemplate (agents.kruise.io/v1alpha1, sbt): a reusable sandbox template; no status.
struct SandboxTemplateSpec {
  WARREN_API_STRUCT;
  std::optional<PodTemplateSpec> pod_template;  // "template"
  std::vector<VolumeClaimTemplate> volume_claim_templates;
  std::vector<std::string> persistent_contents;
  std::vector<RuntimeRef> runtimes;
  std::optional<PauseStrategy> pause_strategy;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("template", s.pod_template);
    v("volumeClaimTemplates", s.volume_claim_templates);
    v("persistentContents", s.persistent_contents);
    v("runtimes", s.runtimes);
    v("pauseStrategy", s.pause_strategy);
  }
};

}  // namespace warren::api
