#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"
#include "api/types/pod_template.h"

namespace warren::api {

struct InplaceUpdateSpec {
  WARREN_API_STRUCT;
  std::string image;
  ResourceRequirements resources;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("image", s.image);
    v("resources", s.resources);
  }
};

// SandboxClaim (agents.kruise.io/v1alpha1, sbc): claim sandboxes out of a SandboxSet.
struct SandboxClaimSpec {
  WARREN_API_STRUCT;
  std::string template_name;        // the SandboxSet to claim from
  std::optional<int32_t> replicas;  // default 1, immutable
  std::optional<base::WallTime> shutdown_time;
  std::optional<Duration> claim_timeout;        // default 1m, >= 1s
  std::optional<Duration> ttl_after_completed;  // default 60m; negative = never
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::map<std::string, std::string> env_vars;
  std::optional<InplaceUpdateSpec> inplace_update;
  std::vector<RuntimeRef> runtimes;
  bool reserve_failed_sandbox = false;
  std::optional<bool> create_on_no_stock;      // default true
  std::optional<Duration> wait_ready_timeout;  // default 30s
  bool skip_init_runtime = false;
  // dynamicVolumesMount stays in the document (CSI mounts are not supported here).

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("templateName", s.template_name);
    v("replicas", s.replicas);
    v("shutdownTime", s.shutdown_time);
    v("claimTimeout", s.claim_timeout);
    v("ttlAfterCompleted", s.ttl_after_completed);
    v("labels", s.labels);
    v("annotations", s.annotations);
    v("envVars", s.env_vars);
    v("inplaceUpdate", s.inplace_update);
    v("runtimes", s.runtimes);
    v("reserveFailedSandbox", s.reserve_failed_sandbox);
    v("createOnNoStock", s.create_on_no_stock);
    v("waitReadyTimeout", s.wait_ready_timeout);
    v("skipInitRuntime", s.skip_init_runtime);
  }
};

struct SandboxClaimStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::string phase;  // Claiming | Completed
  std::string message;
  int32_t claimed_replicas = 0;
  std::optional<base::WallTime> claim_start_time;
  std::optional<base::WallTime> completion_time;
  std::vector<Condition> conditions;  // Completed, TimedOut

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("phase", s.phase);
    v("message", s.message);
    v("claimedReplicas", s.claimed_replicas);
    v("claimStartTime", s.claim_start_time);
    v("completionTime", s.completion_time);
    v("conditions", s.conditions);
  }
};

}  // namespace warren::api
