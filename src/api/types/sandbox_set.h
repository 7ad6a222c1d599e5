#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"

namespace warren::api {

struct MaxUnavailableStrategy {
  WARREN_API_STRUCT;
  std::optional<IntOrString> max_unavailable;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("maxUnavailable", s.max_unavailable);
  }
};

// SandboxSet (agents.kruise.io/v1alpha1, sbs): a warm pool of unclaimed sandboxes.
struct SandboxSetSpec {
  WARREN_API_STRUCT;
  std::optional<int32_t> replicas;  // defaulted to 0
  std::optional<PauseStrategy> pause_strategy;
  std::vector<std::string> persistent_contents;
  std::vector<RuntimeRef> runtimes;
  std::optional<TemplateRef> template_ref;
  std::optional<PodTemplateSpec> pod_template;  // "template"
  std::vector<VolumeClaimTemplate> volume_claim_templates;
  MaxUnavailableStrategy scale_strategy;
  MaxUnavailableStrategy update_strategy;  // maxUnavailable defaults to "20%"

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("replicas", s.replicas);
    v("pauseStrategy", s.pause_strategy);
    v("persistentContents", s.persistent_contents);
    v("runtimes", s.runtimes);
    v("templateRef", s.template_ref);
    v("template", s.pod_template);
    v("volumeClaimTemplates", s.volume_claim_templates);
    v("scaleStrategy", s.scale_strategy);
    v("updateStrategy", s.update_strategy);
  }
};

struct SandboxSetStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  int32_t replicas = 0;
  int32_t available_replicas = 0;
  std::string update_revision;
  std::string current_revision;
  int32_t updated_replicas = 0;
  int32_t updated_available_replicas = 0;
  // Warren's: of availableReplicas, the members paused while idle (spec.pauseStrategy
  // .idleSeconds); a claim takes one only when no member is running, and wakes it.
  int32_t hibernated_replicas = 0;
  std::vector<Condition> conditions;
  std::string selector;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("replicas", s.replicas);
    v("availableReplicas", s.available_replicas);
    v("updateRevision", s.update_revision);
    v("currentRevision", s.current_revision);
    v("updatedReplicas", s.updated_replicas);
    v("updatedAvailableReplicas", s.updated_available_replicas);
    v("hibernatedReplicas", s.hibernated_replicas);
    v("conditions", s.conditions);
    v("selector", s.selector);
  }
};

}  // namespace warren::api
