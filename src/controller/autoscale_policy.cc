#include "controller/autoscale_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "base/time_format.h"

namespace warren::controller::autoscale {
namespace {

using std::chrono::seconds;

// Percent of a percentage IntOrString (admission guarantees the form).
int64_t Percent(const api::IntOrString& v) { return v.Scaled(100, false).value_or(0); }

int32_t CeilPercent(int64_t base, int64_t percent) {
  return static_cast<int32_t>((base * percent + (percent >= 0 ? 99 : 0)) / 100);
}

struct Watermarks {
  int32_t target = 0, lower = 0, upper = 0;
};

// Upstream's computeWatermarks: percentages combine before they are applied (and round up);
// otherwise the target is resolved first and a percentage tolerance is of the target.
Watermarks ComputeWatermarks(const api::IntOrString& target, const api::IntOrString& tolerance,
                             int32_t base) {
  Watermarks w;
  if (target.is_string && tolerance.is_string) {
    int64_t tp = Percent(target), tol = Percent(tolerance);
    w.target = CeilPercent(base, tp);
    w.lower = CeilPercent(base, tp - tol);
    w.upper = CeilPercent(base, tp + tol);
  } else {
    w.target = static_cast<int32_t>(target.Scaled(base, true).value_or(0));
    int32_t tol = tolerance.is_string ? CeilPercent(w.target, Percent(tolerance))
                                      : static_cast<int32_t>(tolerance.int_value);
    w.lower = w.target - tol;
    w.upper = w.target + tol;
  }
  w.lower = std::max(w.lower, 0);
  return w;
}

struct Want {
  int32_t replicas;
  std::string reason;
};

Want Capacity(const Policy& p, const Observation& o) {
  if (!o.capacity) return {o.spec_replicas, "no capacity sample yet"};
  const auto& avg = *o.capacity;
  int32_t base = avg.replicas;
  if (base == 0 && p.target_available->is_string) base = p.max_replicas;  // bootstrap
  Watermarks w = ComputeWatermarks(*p.target_available, p.tolerance, base);
  if (avg.available < w.lower) {
    if (o.spec_replicas > avg.replicas) {
      return {o.spec_replicas, "waiting for the previous scale-up to complete"};
    }
    int32_t deficit = std::max(1, w.target - avg.available);
    return {avg.replicas + deficit,
            fmt::format("available {} below the low watermark {} (target {})", avg.available,
                        w.lower, w.target)};
  }
  if (avg.available > w.upper) {
    if (o.spec_replicas < avg.replicas) {
      return {o.spec_replicas, "waiting for the previous scale-down to complete"};
    }
    if (avg.samples < o.full_window) {
      return {o.spec_replicas, "too few samples for a scale-down"};
    }
    return {std::max(0, avg.replicas - (avg.available - w.target)),
            fmt::format("available {} above the high watermark {} (target {})", avg.available,
                        w.upper, w.target)};
  }
  return {o.spec_replicas, "available within tolerance"};
}

Want Predictive(const Observation& o) {
  if (!o.forecast) return {o.spec_replicas, "no forecast"};
  const auto& f = *o.forecast;
  return {f.replicas,
          fmt::format("predicted demand: {:.0f} claims an hour now, sized from {} recorded claims, "
                      "refill horizon {:.1f}s",
                      f.claims_per_hour, f.claims_in_lookback,
                      static_cast<double>(f.horizon.count()) / 1000.0)};
}

}  // namespace

std::string_view SourceName(Source s) {
  switch (s) {
    case Source::kNone:
      return "none";
    case Source::kBounds:
      return "bounds";
    case Source::kCron:
      return "cron";
    case Source::kCapacity:
      return "capacity";
    case Source::kPredictive:
      return "predictive";
  }
  return "none";
}

Result<Policy> CompilePolicy(const api::PoolAutoscalerSpec& spec) {
  Policy p;
  p.min_replicas = spec.min_replicas.value_or(0);
  p.max_replicas = spec.max_replicas;
  p.suspend = spec.suspend;
  for (const auto& c : spec.cron_policies) {
    auto s = base::CronSchedule::Parse(c.schedule, c.time_zone);
    if (!s.ok()) return s.status().WithPrefix(fmt::format("cron policy \"{}\"", c.name));
    p.cron.push_back({c.name, std::move(*s), c.target_replicas.value_or(0)});
  }
  if (spec.capacity_policy) {
    const auto& c = *spec.capacity_policy;
    p.target_available = c.target_available.value_or(api::IntOrString::Int(0));
    if (c.tolerance) p.tolerance = *c.tolerance;
    if (c.scale_up && c.scale_up->stabilization_window_seconds) {
      p.scale_up_window = seconds(*c.scale_up->stabilization_window_seconds);
    }
    if (c.scale_down && c.scale_down->stabilization_window_seconds) {
      p.scale_down_window = seconds(*c.scale_down->stabilization_window_seconds);
    }
  }
  p.predictive = spec.predictive_policy;
  return p;
}

void CapacitySampler::Observe(base::WallTime now, int32_t available, int32_t replicas) {
  if (samples_.empty() || now - samples_.back().at >= interval_) {
    samples_.push_back({now, available, replicas});
  }
  while (!samples_.empty() && samples_.front().at <= now - window_) samples_.pop_front();
}

std::optional<CapacitySampler::Average> CapacitySampler::Get() const {
  if (samples_.empty()) return std::nullopt;
  double available = 0, replicas = 0;
  for (const auto& s : samples_) {
    available += s.available;
    replicas += s.replicas;
  }
  double n = static_cast<double>(samples_.size());
  return Average{static_cast<int32_t>(std::lround(available / n)),
                 static_cast<int32_t>(std::lround(replicas / n)),
                 static_cast<int>(samples_.size())};
}

Decision Decide(const Policy& p, const Observation& o, const Memory& m) {
  Decision d;
  d.replicas = o.spec_replicas;
  d.cron_last = m.cron_last;

  // 1. Cron: the latest firing since each policy's last one.
  const CronRule* fired = nullptr;
  base::WallTime fired_at{};
  for (const CronRule& c : p.cron) {
    auto last = m.cron_last.find(c.name);
    base::WallTime since = last != m.cron_last.end()
                               ? last->second
                               : std::max(m.created, o.now - std::chrono::minutes(1));
    auto at = c.schedule.LastFiringIn(since, o.now);
    if (!at) continue;
    d.cron_last[c.name] = *at;
    if (fired == nullptr || *at > fired_at) {
      fired = &c;
      fired_at = *at;
    }
  }
  auto clamp = [&](int32_t want) {
    if (want < p.min_replicas) {
      d.limit = "TooFewReplicas";
      return p.min_replicas;
    }
    if (want > p.max_replicas) {
      d.limit = "TooManyReplicas";
      return p.max_replicas;
    }
    return want;
  };
  if (fired != nullptr) {
    d.replicas = clamp(fired->target);
    d.source = Source::kCron;
    d.cron_fired = fired->name;
    d.reason =
        fmt::format("cron policy \"{}\" fired at {}", fired->name, base::FormatRfc3339(fired_at));
    return d;
  }
  // The window of the policy that fired last: its target is a floor.
  std::optional<int32_t> floor;
  std::string floor_name;
  base::WallTime floor_at{};
  for (const CronRule& c : p.cron) {
    auto it = d.cron_last.find(c.name);
    if (it != d.cron_last.end() && (!floor || it->second > floor_at)) {
      floor = c.target;
      floor_name = c.name;
      floor_at = it->second;
    }
  }

  // 2. Demand: capacity and/or predictive; with neither, keep the replicas.
  Want want{o.spec_replicas, "no scaling policy"};
  d.source = Source::kBounds;
  if (p.target_available && p.predictive) {
    Want cap = Capacity(p, o), pred = Predictive(o);
    bool pred_wins = pred.replicas > cap.replicas;
    want = pred_wins ? pred : cap;
    d.source = pred_wins ? Source::kPredictive : Source::kCapacity;
  } else if (p.target_available) {
    want = Capacity(p, o);
    d.source = Source::kCapacity;
  } else if (p.predictive) {
    want = Predictive(o);
    d.source = Source::kPredictive;
  }
  if (floor && want.replicas < *floor) {
    want = {*floor, fmt::format("cron policy \"{}\" holds at least {} until another fires",
                                floor_name, *floor)};
    d.source = Source::kCron;
  }
  d.reason = want.reason;
  int32_t target = clamp(want.replicas);
  if (target != want.replicas) d.source = Source::kBounds;

  // 3. Cooldowns since the last scale of either direction.
  if (target != o.spec_replicas && m.last_scale) {
    seconds window = target > o.spec_replicas ? p.scale_up_window : p.scale_down_window;
    auto since = o.now - *m.last_scale;
    if (since < window) {
      d.cooldown_remaining = std::chrono::ceil<seconds>(window - since);
      d.reason = fmt::format("{}; held by the {} stabilization window ({}s left)", d.reason,
                             target > o.spec_replicas ? "scale-up" : "scale-down",
                             d.cooldown_remaining->count());
      d.limit.clear();
      return d;
    }
  }
  d.replicas = target;
  return d;
}

PoolDemand::Ms HorizonFor(const Policy& p, const PoolDemand& demand) {
  using Ms = PoolDemand::Ms;
  if (p.predictive && p.predictive->horizon_seconds.value_or(0) > 0) {
    return Ms(seconds(*p.predictive->horizon_seconds));
  }
  return demand.RefillP90().value_or(kDefaultRefill) + kSetRefillDelay;
}

std::optional<PoolDemand::Forecast> ForecastFor(const Policy& p, PoolDemand& demand,
                                                base::WallTime now) {
  if (!p.predictive) return std::nullopt;
  demand.Prune(now - seconds(p.predictive->lookback_seconds.value_or(86400)));
  return demand.Predict(now, seconds(p.predictive->rate_window_seconds.value_or(600)),
                        p.predictive->cold_creates_per_hour.value_or(30), HorizonFor(p, demand));
}

}  // namespace warren::controller::autoscale
