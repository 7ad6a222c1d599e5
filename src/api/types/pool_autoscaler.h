#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types/common.h"

namespace warren::api {

// PoolAutoscaler (agents.kruise.io/v1alpha1, pas): sizes one SandboxSet's spec.replicas
// (openkruise-agents.md §1.10, upstream PR #625), plus Warren's predictivePolicy. The
// controller's decision is controller/autoscale_policy.h.
struct ScaleTargetRef {
  WARREN_API_STRUCT;
  std::string api_version;
  std::string kind;  // SandboxSet
  std::string name;
  // Not upstream's (CrossVersionObjectReference has none); read only to refuse another namespace.
  std::string namespace_;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("apiVersion", s.api_version);
    v("kind", s.kind);
    v("name", s.name);
    v("namespace", s.namespace_);
  }
};

struct CronScalingPolicy {
  WARREN_API_STRUCT;
  std::string name;
  std::string time_zone;  // IANA name; "" = UTC (upstream: the controller's zone)
  std::string schedule;   // 5-field cron (base/cron_schedule.h)
  std::optional<int32_t> target_replicas;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("timeZone", s.time_zone);
    v("schedule", s.schedule);
    v("targetReplicas", s.target_replicas);
  }
};

struct CapacityScalingRules {
  WARREN_API_STRUCT;
  std::optional<int32_t> stabilization_window_seconds;  // 0..3600

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("stabilizationWindowSeconds", s.stabilization_window_seconds);
  }
};

struct CapacityPolicy {
  WARREN_API_STRUCT;
  std::optional<IntOrString> target_available;     // required
  std::optional<IntOrString> tolerance;            // default "10%"
  std::optional<CapacityScalingRules> scale_up;    // window default 0
  std::optional<CapacityScalingRules> scale_down;  // window default 300

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("targetAvailable", s.target_available);
    v("tolerance", s.tolerance);
    v("scaleUp", s.scale_up);
    v("scaleDown", s.scale_down);
  }
};

// Warren's own: size the pool from its claim history (controller/pool_demand.h). Each claim
// is recorded with the pool size it needed (the spec.replicas it came to, less the members still
// available, plus one). The claim rate of the last `rateWindowSeconds` says how many claims are
// coming, of which `coldCreatesPerHour` may find the pool empty; the size is the smallest that
// would have left no larger a share of the last `lookbackSeconds` of claims needing more — or
// more, when the last minute's rate needs more over one refill horizon (a member's measured
// creation → Ready, or `horizonSeconds`). Scale-downs keep capacityPolicy's scaleDown window
// (default 300 s).
struct PredictivePolicy {
  WARREN_API_STRUCT;
  std::optional<int32_t> lookback_seconds;       // default 86400; 600..604800
  std::optional<int32_t> rate_window_seconds;    // default 600; 60..86400
  std::optional<int32_t> cold_creates_per_hour;  // default 30; 0..100000
  std::optional<int32_t> horizon_seconds;        // 0 (default) = measured; 0..3600

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("lookbackSeconds", s.lookback_seconds);
    v("rateWindowSeconds", s.rate_window_seconds);
    v("coldCreatesPerHour", s.cold_creates_per_hour);
    v("horizonSeconds", s.horizon_seconds);
  }
};

struct PoolAutoscalerSpec {
  WARREN_API_STRUCT;
  ScaleTargetRef scale_target_ref;
  std::optional<int32_t> min_replicas;  // default 0
  int32_t max_replicas = 0;             // >= 1, >= minReplicas
  std::vector<CronScalingPolicy> cron_policies;
  std::optional<CapacityPolicy> capacity_policy;
  std::optional<PredictivePolicy> predictive_policy;
  bool suspend = false;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("scaleTargetRef", s.scale_target_ref);
    v("minReplicas", s.min_replicas);
    v("maxReplicas", s.max_replicas);
    v("cronPolicies", s.cron_policies);
    v("capacityPolicy", s.capacity_policy);
    v("predictivePolicy", s.predictive_policy);
    v("suspend", s.suspend);
  }
};

struct CronScalingPolicyStatus {
  WARREN_API_STRUCT;
  std::string name;
  std::optional<base::WallTime> last_schedule_time;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("name", s.name);
    v("lastScheduleTime", s.last_schedule_time);
  }
};

struct CapacityStatus {
  WARREN_API_STRUCT;
  int32_t available = 0;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("available", s.available);
  }
};

// Warren's: what the predictive policy last computed, so its sizing can be checked by hand.
struct PredictionStatus {
  WARREN_API_STRUCT;
  int32_t horizon_seconds = 0;     // the refill horizon used
  int32_t claims_in_lookback = 0;  // claims seen in the lookback
  int32_t replicas = 0;            // the size it asked for

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("horizonSeconds", s.horizon_seconds);
    v("claimsInLookback", s.claims_in_lookback);
    v("replicas", s.replicas);
  }
};

struct PoolAutoscalerStatus {
  WARREN_API_STRUCT;
  int64_t observed_generation = 0;
  std::optional<base::WallTime> last_scale_time;
  int32_t current_replicas = 0;
  int32_t desired_replicas = 0;
  bool suspended = false;
  std::vector<CronScalingPolicyStatus> applied_cron_policies;
  CapacityStatus current_capacity;
  std::optional<PredictionStatus> prediction;
  std::vector<Condition> conditions;  // ScalingActive, AbleToScale, ScalingLimited

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("observedGeneration", s.observed_generation);
    v("lastScaleTime", s.last_scale_time);
    v("currentReplicas", s.current_replicas);
    v("desiredReplicas", s.desired_replicas);
    v("suspended", s.suspended);
    v("appliedCronPolicies", s.applied_cron_policies);
    v("currentCapacity", s.current_capacity);
    v("prediction", s.prediction);
    v("conditions", s.conditions);
  }
};

}  // namespace warren::api
