#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/pod_template.h"
#include "api/types/volume.h"

namespace warren::api {

// Sandbox (agents.kruise.io/v1alpha1, sbx): one isolated environment.
struct SandboxSpec {
  WARREN_API_STRUCT;
  bool paused = false;
  std::optional<PauseStrategy> pause_strategy;
  std::vector<std::string> persistent_contents;  // ip, memory, filesystem
  std::optional<base::WallTime> shutdown_time;
  std::optional<base::WallTime> pause_time;
  std::vector<RuntimeRef> runtimes;
  std::optional<SandboxLifecycle> lifecycle;
  std::optional<UpgradePolicy> upgrade_policy;
  std::optional<TemplateRef> template_ref;
  std::optional<PodTemplateSpec> pod_template;  // "template"
  std::vector<VolumeClaimTemplate> volume_claim_templates;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("paused", s.paused);
    v("pauseStrategy", s.pause_strategy);
    v("persistentContents", s.persistent_contents);
    v("shutdownTime", s.shutdown_time);
    v("pauseTime", s.pause_time);
    v("runtimes", s.runtimes);
    v("lifecycle", s.lifecycle);
    v("upgradePolicy", s.upgrade_policy);
    v("templateRef", s.template_ref);
    v("template", s.pod_template);
    v("volumeClaimTemplates", s.volume_claim_templates);
  }
};

struct PodInfo {
  WARREN_API_STRUCT;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> labels;
  std::string node_name;
  std::string pod_ip;
  std::string pod_uid;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("annotations", s.annotations);
    v("labels", s.labels);
    v("nodeName", s.node_name);
    v("podIP", s.pod_ip);
    v("podUID", s.pod_uid);
  }
};

struct SandboxStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::string phase;
  std::string message;
  std::vector<Condition> conditions;
  std::optional<PodInfo> pod_info;
  std::string node_name;
  std::string sandbox_ip;
  std::string update_revision;
  int32_t recycled_count = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("phase", s.phase);
    v("message", s.message);
    v("conditions", s.conditions);
    v("podInfo", s.pod_info);
    v("nodeName", s.node_name);
    v("sandboxIp", s.sandbox_ip);
    v("updateRevision", s.update_revision);
    v("recycledCount", s.recycled_count);
  }
};

// Sandbox phases (status.phase).
namespace sandbox_phase {
inline constexpr const char* kPending = "Pending";
inline constexpr const char* kRunning = "Running";
inline constexpr const char* kPaused = "Paused";
inline constexpr const char* kResuming = "Resuming";
inline constexpr const char* kUpgrading = "Upgrading";
inline constexpr const char* kRecycling = "Recycling";
inline constexpr const char* kSucceeded = "Succeeded";
inline constexpr const char* kFailed = "Failed";
inline constexpr const char* kTerminating = "Terminating";
}  // namespace sandbox_phase

}  // namespace warren::api
