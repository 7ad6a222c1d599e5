// Defaulting and validation of PoolAutoscaler, following upstream's webhook (PR #625,
// pkg/webhook/poolautoscaler) where it has one, plus Warren's predictivePolicy and tenancy rule.

#include <fmt/format.h>

#include <set>

#include "api/admission.h"
#include "api/typed_codec.h"
#include "api/types/pool_autoscaler.h"
#include "base/cron_schedule.h"

namespace warren::api {
namespace {

constexpr size_t kMaxCronPolicies = 20;
constexpr int32_t kMaxStabilizationSeconds = 3600;

// An absolute count >= 0 or a percentage 0%..100%; the percentage when it is one.
std::optional<int64_t> ValidateCountOrPercent(const IntOrString& v, const std::string& path,
                                              FieldErrors& errors) {
  if (!v.is_string) {
    if (v.int_value < 0) {
      errors.Add(path, fmt::format("Invalid value: {}: must be >= 0", v.int_value));
    }
    return std::nullopt;
  }
  auto percent = v.Scaled(100, false);
  if (!percent.ok() || *percent > 100) {
    errors.Add(path, fmt::format("Invalid value: \"{}\": must be a percentage between 0% and 100% "
                                 "(e.g. \"70%\") or an integer",
                                 v.str_value));
    return std::nullopt;
  }
  return *percent;
}

void ValidateWindow(std::optional<CapacityScalingRules>& rules, int32_t fallback,
                    const std::string& path, FieldErrors& errors) {
  if (!rules) rules.emplace();
  auto& w = rules->stabilization_window_seconds;
  if (!w) w = fallback;
  if (*w < 0 || *w > kMaxStabilizationSeconds) {
    errors.Add(
        path + ".stabilizationWindowSeconds",
        fmt::format("Invalid value: {}: must be between 0 and {}", *w, kMaxStabilizationSeconds));
  }
}

void ValidateCapacity(CapacityPolicy& c, int32_t max_replicas, FieldErrors& errors) {
  const std::string p = "spec.capacityPolicy";
  if (!c.tolerance) c.tolerance = IntOrString::String("10%");
  std::optional<int64_t> target_pct, tolerance_pct;
  if (!c.target_available) {
    errors.Required(p + ".targetAvailable");
  } else {
    target_pct = ValidateCountOrPercent(*c.target_available, p + ".targetAvailable", errors);
    if (!c.target_available->is_string && c.target_available->int_value > max_replicas) {
      errors.Add(p + ".targetAvailable",
                 fmt::format("Invalid value: {}: must not be greater than maxReplicas ({}), or "
                             "the target can never be reached",
                             c.target_available->int_value, max_replicas));
    }
  }
  tolerance_pct = ValidateCountOrPercent(*c.tolerance, p + ".tolerance", errors);
  // A tolerance as large as the target puts the lower watermark at 0, where a scale-up can never
  // trigger (upstream's rule; a percentage target with an absolute tolerance depends on the pool
  // size and is left to run time).
  if (c.target_available) {
    const IntOrString& t = *c.target_available;
    const IntOrString& tol = *c.tolerance;
    bool too_wide = false;
    if (t.is_string && tol.is_string && target_pct && tolerance_pct) {
      too_wide = *tolerance_pct >= *target_pct;
    } else if (!t.is_string && !tol.is_string) {
      too_wide = tol.int_value >= t.int_value && t.int_value > 0;
    } else if (!t.is_string && tol.is_string && tolerance_pct) {
      too_wide = *tolerance_pct >= 100;
    }
    if (too_wide) {
      errors.Add(p + ".tolerance",
                 fmt::format("Invalid value: {}: must be less than targetAvailable, or the lower "
                             "watermark is 0 and a scale-up can never trigger",
                             tol.ToString()));
    }
  }
  ValidateWindow(c.scale_up, 0, p + ".scaleUp", errors);
  ValidateWindow(c.scale_down, 300, p + ".scaleDown", errors);
}

void ValidatePredictive(PredictivePolicy& pp, FieldErrors& errors) {
  const std::string p = "spec.predictivePolicy";
  if (!pp.lookback_seconds) pp.lookback_seconds = 86400;
  if (!pp.rate_window_seconds) pp.rate_window_seconds = 600;
  if (!pp.cold_creates_per_hour) pp.cold_creates_per_hour = 30;
  if (!pp.horizon_seconds) pp.horizon_seconds = 0;
  auto range = [&](int32_t v, const char* field, int32_t lo, int32_t hi) {
    if (v < lo || v > hi) {
      errors.Add(p + "." + field,
                 fmt::format("Invalid value: {}: must be between {} and {}", v, lo, hi));
    }
  };
  range(*pp.lookback_seconds, "lookbackSeconds", 600, 604800);
  range(*pp.rate_window_seconds, "rateWindowSeconds", 60, 86400);
  range(*pp.cold_creates_per_hour, "coldCreatesPerHour", 0, 100000);
  range(*pp.horizon_seconds, "horizonSeconds", 0, 3600);
}

void ValidateCron(std::vector<CronScalingPolicy>& policies, int32_t min, int32_t max,
                  FieldErrors& errors) {
  if (policies.size() > kMaxCronPolicies) {
    errors.Add("spec.cronPolicies", fmt::format("Too many: {}: must have at most {} items",
                                                policies.size(), kMaxCronPolicies));
  }
  std::set<std::string> names;
  for (size_t i = 0; i < policies.size(); ++i) {
    const CronScalingPolicy& c = policies[i];
    std::string path = IndexPath("spec.cronPolicies", i);
    if (c.name.empty()) {
      errors.Required(path + ".name");
    } else if (!names.insert(c.name).second) {
      errors.Add(path + ".name", fmt::format("Duplicate value: \"{}\"", c.name));
    } else if (auto err = CheckDns1123Label(c.name)) {
      errors.Add(path + ".name", *err);
    }
    if (c.schedule.empty()) {
      errors.Required(path + ".schedule");
    } else {
      auto s = base::CronSchedule::Parse(c.schedule, c.time_zone);
      if (!s.ok()) {
        bool zone =
            s.status().message().find("time zone") != std::string::npos && !c.time_zone.empty();
        errors.Add(path + (zone ? ".timeZone" : ".schedule"),
                   fmt::format("Invalid value: \"{}\": {}", zone ? c.time_zone : c.schedule,
                               s.status().message()));
      } else if (!s->Next(std::chrono::system_clock::now())) {
        errors.Add(path + ".schedule",
                   fmt::format("Invalid value: \"{}\": never fires", c.schedule));
      }
    }
    if (!c.target_replicas) {
      errors.Required(path + ".targetReplicas");
    } else if (*c.target_replicas < min || *c.target_replicas > max) {
      errors.Add(path + ".targetReplicas",
                 fmt::format("Invalid value: {}: must be between minReplicas ({}) and "
                             "maxReplicas ({})",
                             *c.target_replicas, min, max));
    }
  }
}

}  // namespace

Status AdmitPoolAutoscaler(Object& object) {
  ASSIGN_OR_RETURN(PoolAutoscalerSpec spec, DecodeSpec<PoolAutoscalerSpec>(object));
  FieldErrors errors;
  ScaleTargetRef& ref = spec.scale_target_ref;
  if (ref.kind.empty()) {
    errors.Required("spec.scaleTargetRef.kind");
  } else if (ref.kind != "SandboxSet") {
    errors.Unsupported("spec.scaleTargetRef.kind", ref.kind, {"SandboxSet"});
  }
  if (!ref.api_version.empty() && ref.api_version != kAgentsApiVersion) {
    errors.Unsupported("spec.scaleTargetRef.apiVersion", ref.api_version, {kAgentsApiVersion});
  }
  if (ref.name.empty()) {
    errors.Required("spec.scaleTargetRef.name");
  } else if (auto err = CheckDns1123Subdomain(ref.name)) {
    errors.Add("spec.scaleTargetRef.name", *err);
  }
  if (!ref.namespace_.empty() && ref.namespace_ != object.metadata.namespace_) {
    errors.Add("spec.scaleTargetRef.namespace",
               fmt::format("Forbidden: \"{}\": a PoolAutoscaler scales a SandboxSet of its own "
                           "namespace (\"{}\")",
                           ref.namespace_, object.metadata.namespace_));
  }
  if (!spec.min_replicas) spec.min_replicas = 0;
  int32_t min = *spec.min_replicas;
  if (min < 0) errors.Add("spec.minReplicas", fmt::format("Invalid value: {}: must be >= 0", min));
  if (spec.max_replicas < 1) {
    errors.Add("spec.maxReplicas",
               fmt::format("Invalid value: {}: must be >= 1", spec.max_replicas));
  } else if (min > spec.max_replicas) {
    errors.Add("spec.minReplicas", fmt::format("Invalid value: {}: must be <= maxReplicas ({})",
                                               min, spec.max_replicas));
  }
  ValidateCron(spec.cron_policies, min, spec.max_replicas, errors);
  if (spec.capacity_policy) ValidateCapacity(*spec.capacity_policy, spec.max_replicas, errors);
  if (spec.predictive_policy) ValidatePredictive(*spec.predictive_policy, errors);
  RETURN_IF_ERROR(errors.ToStatus());
  EncodeSpec(spec, object);
  return Status::Ok();
}

Status AdmitPoolAutoscalerStatus(Object& object) {
  return DecodeStatus<PoolAutoscalerStatus>(object).status();
}

}  // namespace warren::api
