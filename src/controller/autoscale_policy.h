#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/int_or_string.h"
#include "api/types/pool_autoscaler.h"
#include "base/clock.h"
#include "base/cron_schedule.h"
#include "base/result.h"
#include "controller/pool_demand.h"

namespace warren::controller::autoscale {

// The decision of a PoolAutoscaler (openkruise-agents.md §2.8), as pure functions of the spec,
// what was observed and what was remembered, so the controller and bench/autoscaler run the same
// code and the tests need no store and no sleeps:
//
// 1. Cron: a policy whose schedule fired since it last did (a new policy: in the last minute,
//    never before the autoscaler existed) sets the replicas to its target at once — it wins
//    over the other policies and the cooldowns (upstream's rule). The latest firing wins when
//    several did. Until the next firing of any cron policy, the last one's target stays as a
//    floor the other policies do not scale below: a window ("100 from 08:00, 20 from 20:00").
// 2. Otherwise capacityPolicy (upstream's watermarks over the 30 s average of the set's
//    available members and replicas): below target - tolerance, replicas + (target - available);
//    above target + tolerance (and with a full observation window), replicas - (available -
//    target); a percentage is of the replicas (of maxReplicas while the pool is empty). It
//    holds while the set is still moving toward the previous decision.
//    And/or predictivePolicy (PoolDemand::Predict). With both, the larger wins: either may scale
//    up, a scale-down needs both. With neither, the replicas are kept (bounds only).
// 3. Cooldowns (stabilization windows, upstream's model): a scale-up waits scaleUp's window
//    (default 0) since the last scale of either direction, a scale-down scaleDown's (300 s).
// 4. Clamp to [minReplicas, maxReplicas].
struct CronRule {
  std::string name;
  base::CronSchedule schedule;
  int32_t target = 0;
};

struct Policy {
  int32_t min_replicas = 0;
  int32_t max_replicas = 1;
  std::vector<CronRule> cron;
  std::optional<api::IntOrString> target_available;  // capacityPolicy, when set
  api::IntOrString tolerance = api::IntOrString::String("10%");
  std::optional<api::PredictivePolicy> predictive;  // defaults filled in by admission
  std::chrono::seconds scale_up_window{0};
  std::chrono::seconds scale_down_window{300};
  bool suspend = false;
};

// The policy a (defaulted, admitted) spec states. InvalidArgument naming the cron policy when a
// schedule or zone does not load (a zone file removed since admission).
Result<Policy> CompilePolicy(const api::PoolAutoscalerSpec& spec);

// Samples of the set's available members and replicas every `interval`, averaged over `window`
// (upstream: 5 s over 30 s), so one claim burst does not scale the pool by itself.
// Thread-compatible.
class CapacitySampler {
 public:
  explicit CapacitySampler(std::chrono::seconds interval = std::chrono::seconds(5),
                           std::chrono::seconds window = std::chrono::seconds(30))
      : interval_(interval), window_(window) {}

  // Records a sample when `interval` has passed since the last one; drops samples older than
  // the window.
  void Observe(base::WallTime now, int32_t available, int32_t replicas);

  struct Average {
    int32_t available = 0;
    int32_t replicas = 0;
    int samples = 0;
  };
  std::optional<Average> Get() const;
  // Samples a full window holds: a scale-down waits for them (after a restart, say).
  int full_window() const { return static_cast<int>(window_ / interval_); }
  std::chrono::seconds interval() const { return interval_; }

 private:
  struct Sample {
    base::WallTime at;
    int32_t available;
    int32_t replicas;
  };
  std::chrono::seconds interval_, window_;
  std::deque<Sample> samples_;
};

struct Observation {
  base::WallTime now;
  int32_t spec_replicas = 0;                         // the set's spec.replicas now
  std::optional<CapacitySampler::Average> capacity;  // null before the first sample
  int full_window = 6;
  std::optional<PoolDemand::Forecast> forecast;  // when predictive
};

// What the controller keeps between decisions (and persists in status).
struct Memory {
  base::WallTime created;                           // firings before this are never acted on
  std::map<std::string, base::WallTime> cron_last;  // status.appliedCronPolicies
  std::optional<base::WallTime> last_scale;         // status.lastScaleTime
};

enum class Source { kNone, kBounds, kCron, kCapacity, kPredictive };
std::string_view SourceName(Source s);

struct Decision {
  int32_t replicas = 0;  // what spec.replicas should be (== spec_replicas: no change)
  Source source = Source::kNone;
  std::string reason;  // for the Event and logs
  std::string limit;   // "TooFewReplicas" / "TooManyReplicas" when clamped
  std::optional<std::chrono::seconds> cooldown_remaining;  // a change held back
  std::map<std::string, base::WallTime> cron_last;         // to persist
  std::string cron_fired;                                  // the policy that fired now, if one did
};

Decision Decide(const Policy& policy, const Observation& observation, const Memory& memory);

// Before any member of the pool has been seen becoming Ready, the refill time assumed.
inline constexpr std::chrono::milliseconds kDefaultRefill{2000};

// How long the SandboxSet controller may put a refill off while claims keep coming
// (SandboxSetControllerOptions::refill_max_delay; past it, members are made a few at a time until
// the claims pause): a member's creation → Ready does not see it.
inline constexpr std::chrono::milliseconds kSetRefillDelay{1000};

// The refill horizon: the policy's horizonSeconds, else the pool's measured refill p90 (or
// kDefaultRefill before one is measured) plus kSetRefillDelay. Not the decision interval: the
// set refills after each claim by itself; decisions only move the size.
PoolDemand::Ms HorizonFor(const Policy& policy, const PoolDemand& demand);

// The predictive policy's forecast (after forgetting claims older than its lookback), or null
// without a predictive policy.
std::optional<PoolDemand::Forecast> ForecastFor(const Policy& policy, PoolDemand& demand,
                                                base::WallTime now);

}  // namespace warren::controller::autoscale
