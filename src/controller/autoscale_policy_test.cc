#include "controller/autoscale_policy.h"

#include <gtest/gtest.h>

#include "base/time_format.h"

namespace warren::controller::autoscale {
namespace {

using namespace std::chrono_literals;

base::WallTime At(std::string_view s) { return base::ParseRfc3339(s).value(); }

Policy Bounds(int32_t min, int32_t max) {
  Policy p;
  p.min_replicas = min;
  p.max_replicas = max;
  return p;
}

Policy Watermark(int32_t target, const char* tolerance = "10%", int32_t max = 100) {
  Policy p = Bounds(0, max);
  p.target_available = api::IntOrString::Int(target);
  p.tolerance = tolerance[0] && std::string_view(tolerance).back() == '%'
                    ? api::IntOrString::String(tolerance)
                    : api::IntOrString::Int(std::stoi(tolerance));
  return p;
}

Observation Observe(base::WallTime now, int32_t spec, int32_t available, int32_t replicas,
                    int samples = 6) {
  Observation o;
  o.now = now;
  o.spec_replicas = spec;
  o.capacity = CapacitySampler::Average{available, replicas, samples};
  o.full_window = 6;
  return o;
}

Memory Fresh(base::WallTime created) {
  Memory m;
  m.created = created;
  return m;
}

CronRule Cron(const char* name, const char* schedule, int32_t target) {
  return {name, *base::CronSchedule::Parse(schedule), target};
}

TEST(AutoscalePolicyTest, BoundsAloneClampAndOtherwiseKeep) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Bounds(5, 10);
  EXPECT_EQ(Decide(p, Observe(now, 7, 7, 7), Fresh(now)).replicas, 7);
  Decision low = Decide(p, Observe(now, 2, 2, 2), Fresh(now));
  EXPECT_EQ(low.replicas, 5);
  EXPECT_EQ(low.limit, "TooFewReplicas");
  Decision high = Decide(p, Observe(now, 30, 30, 30), Fresh(now));
  EXPECT_EQ(high.replicas, 10);
  EXPECT_EQ(high.limit, "TooManyReplicas");
}

TEST(AutoscalePolicyTest, WatermarkScalesUpBelowTheBandAndHoldsWithin) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Watermark(10, "2");
  // Band [8, 12] around 10 available.
  EXPECT_EQ(Decide(p, Observe(now, 20, 9, 20), Fresh(now)).replicas, 20);
  EXPECT_EQ(Decide(p, Observe(now, 20, 12, 20), Fresh(now)).replicas, 20);
  Decision up = Decide(p, Observe(now, 20, 3, 20), Fresh(now));
  EXPECT_EQ(up.replicas, 27);  // replicas + (target - available)
  EXPECT_EQ(up.source, Source::kCapacity);
  EXPECT_NE(up.reason.find("below the low watermark 8"), std::string::npos) << up.reason;
  // While the set has not caught up with a previous scale-up, hold.
  EXPECT_EQ(Decide(p, Observe(now, 27, 3, 20), Fresh(now)).replicas, 27);
}

TEST(AutoscalePolicyTest, WatermarkScalesDownOnlyWithAFullWindow) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Watermark(10, "2");
  EXPECT_EQ(Decide(p, Observe(now, 30, 25, 30), Fresh(now)).replicas, 15);
  EXPECT_EQ(Decide(p, Observe(now, 30, 25, 30, /*samples=*/3), Fresh(now)).replicas, 30);
}

TEST(AutoscalePolicyTest, PercentagesCombineBeforeTheyApplyAndBootstrapFromMax) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Bounds(0, 20);
  p.target_available = api::IntOrString::String("70%");
  p.tolerance = api::IntOrString::String("10%");
  // Upstream's table: 4 replicas, 0 available → target ceil(2.8)=3, low ceil(2.4)=3 → 7.
  EXPECT_EQ(Decide(p, Observe(now, 4, 0, 4), Fresh(now)).replicas, 7);
  // An empty pool takes the percentage of maxReplicas: 70% of 20 = 14.
  EXPECT_EQ(Decide(p, Observe(now, 0, 0, 0), Fresh(now)).replicas, 14);
}

TEST(AutoscalePolicyTest, CooldownsHoldChangesSinceTheLastScale) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Watermark(10, "2");
  p.scale_up_window = 60s;
  Memory m = Fresh(now - 1h);
  m.last_scale = now - 100s;
  // A scale-down waits 300 s since the last scale of either direction.
  Decision down = Decide(p, Observe(now, 30, 25, 30), m);
  EXPECT_EQ(down.replicas, 30);
  ASSERT_TRUE(down.cooldown_remaining);
  EXPECT_EQ(*down.cooldown_remaining, 200s);
  // A scale-up waits its own 60 s: past it here.
  EXPECT_EQ(Decide(p, Observe(now, 30, 2, 30), m).replicas, 38);
  m.last_scale = now - 30s;
  EXPECT_EQ(Decide(p, Observe(now, 30, 2, 30), m).replicas, 30);
  m.last_scale = now - 300s;
  EXPECT_EQ(Decide(p, Observe(now, 30, 25, 30), m).replicas, 15);
}

TEST(AutoscalePolicyTest, CronFiringWinsOverCapacityAndCooldowns) {
  auto created = At("2026-01-01T00:00:00Z");
  Policy p = Watermark(10, "2");
  p.cron = {Cron("day", "0 8 * * *", 50), Cron("night", "0 20 * * *", 5)};
  Memory m = Fresh(created);
  m.last_scale = At("2026-01-01T07:59:00Z");  // inside the scale-down window
  auto now = At("2026-01-01T08:00:03Z");
  Decision d = Decide(p, Observe(now, 30, 25, 30), m);
  EXPECT_EQ(d.replicas, 50);
  EXPECT_EQ(d.source, Source::kCron);
  EXPECT_EQ(d.cron_fired, "day");
  EXPECT_NE(d.reason.find("cron policy \"day\" fired at 2026-01-01T08:00:00Z"), std::string::npos);
  EXPECT_EQ(d.cron_last.at("day"), At("2026-01-01T08:00:00Z"));
  EXPECT_FALSE(d.cron_last.count("night"));
  // The next decision sees no new firing: capacity runs, but never below the window's 50.
  m.cron_last = d.cron_last;
  m.last_scale = now;
  Decision later = Decide(p, Observe(now + 10min, 50, 48, 50), m);
  EXPECT_EQ(later.replicas, 50);
  EXPECT_EQ(later.source, Source::kCron);
  // Above the floor, capacity scales up as usual.
  EXPECT_EQ(Decide(p, Observe(now + 10min, 50, 0, 50), m).replicas, 60);
  // At 20:00 the night policy fires and its target wins, below the old floor.
  Decision night = Decide(p, Observe(At("2026-01-01T20:00:01Z"), 50, 40, 50), m);
  EXPECT_EQ(night.replicas, 5);
  EXPECT_EQ(night.cron_fired, "night");
}

TEST(AutoscalePolicyTest, CronIgnoresFiringsBeforeTheAutoscalerExisted) {
  Policy p = Bounds(0, 100);
  p.cron = {Cron("day", "0 8 * * *", 50)};
  auto now = At("2026-01-01T09:00:00Z");
  EXPECT_EQ(Decide(p, Observe(now, 3, 3, 3), Fresh(now - 10s)).replicas, 3);
  // A cron target outside the bounds is clamped.
  p.max_replicas = 40;
  Decision d =
      Decide(p, Observe(At("2026-01-02T08:00:00Z"), 3, 3, 3), Fresh(At("2026-01-01T12:00:00Z")));
  EXPECT_EQ(d.replicas, 40);
  EXPECT_EQ(d.limit, "TooManyReplicas");
}

TEST(AutoscalePolicyTest, CapacitySamplerAveragesTheWindow) {
  CapacitySampler s(5s, 30s);
  auto t = At("2026-01-01T00:00:00Z");
  EXPECT_FALSE(s.Get());
  s.Observe(t, 10, 10);
  s.Observe(t + 1s, 0, 10);  // not due: ignored
  s.Observe(t + 5s, 0, 10);
  auto a = s.Get();
  ASSERT_TRUE(a);
  EXPECT_EQ(a->available, 5);
  EXPECT_EQ(a->samples, 2);
  for (int i = 2; i <= 8; ++i) s.Observe(t + std::chrono::seconds(5 * i), 4, 10);
  a = s.Get();
  EXPECT_EQ(a->samples, 6);  // 30 s of samples
  EXPECT_EQ(a->available, 4);
  EXPECT_EQ(s.full_window(), 6);
}

TEST(PoolDemandTest, NeededSizeFromWhatWasLeft) {
  EXPECT_EQ(PoolDemand::Needed(10, 10, 0), 1);
  EXPECT_EQ(PoolDemand::Needed(10, 3, 0), 8);
  EXPECT_EQ(PoolDemand::Needed(10, 0, 1), 11);
  EXPECT_EQ(PoolDemand::Needed(10, 0, 4), 14);
}

TEST(PoolDemandTest, ForecastCoversAllButTheBudgetedShare) {
  PoolDemand d;
  auto t0 = At("2026-01-01T00:00:00Z");
  // 600 claims in 10 minutes (3600/h): 594 needed 2, 6 needed 20.
  for (int i = 0; i < 600; ++i) d.AddClaim(t0 + std::chrono::seconds(i), i % 100 == 0 ? 20 : 2);
  auto now = t0 + 600s;
  // 36 cold an hour at 3600/h is 1%: the 6 claims that needed 20 are exactly 1%, so 2 covers
  // the rest — but the last minute's rate (1/s) over a 1 s horizon asks for ceil(1 + 2·1) = 3.
  auto f = d.Predict(now, 600s, 36, 1s);
  EXPECT_EQ(f.claims_in_lookback, 600);
  EXPECT_DOUBLE_EQ(f.claims_per_hour, 3600);
  EXPECT_EQ(f.replicas, 3);
  // With a smaller budget the size covers the claims that needed 20.
  EXPECT_EQ(d.Predict(now, 600s, 30, 1s).replicas, 20);
  EXPECT_EQ(d.Predict(now, 600s, 0, 1s).replicas, 20);
  // A budget above the rate needs nothing for the history; the rate term remains.
  EXPECT_EQ(d.Predict(now, 600s, 100000, 1s).replicas, 3);
}

TEST(PoolDemandTest, QuietHistoryAsksForNothingAndPruneForgets) {
  PoolDemand d;
  auto t0 = At("2026-01-01T00:00:00Z");
  EXPECT_EQ(d.Predict(t0, 600s, 30, 1s).replicas, 0);
  d.AddClaim(t0, 5);
  d.Prune(t0);
  EXPECT_EQ(d.claims(), 0u);
  d.AddRefill(100ms);
  d.AddRefill(900ms);
  EXPECT_EQ(*d.RefillP90(), 900ms);
}

TEST(AutoscalePolicyTest, PredictiveSizesFromTheForecastAndItsHorizon) {
  auto now = At("2026-01-01T12:00:00Z");
  Policy p = Bounds(0, 100);
  api::PredictivePolicy pp;
  pp.lookback_seconds = 3600;
  pp.rate_window_seconds = 600;
  pp.cold_creates_per_hour = 0;
  pp.horizon_seconds = 0;
  p.predictive = pp;
  PoolDemand d;
  EXPECT_EQ(HorizonFor(p, d), kDefaultRefill + kSetRefillDelay);
  d.AddRefill(300ms);
  EXPECT_EQ(HorizonFor(p, d), 300ms + kSetRefillDelay);
  // A claim every 10 s for 10 minutes, each of which needed 12 members.
  for (int i = 60; i > 0; --i) d.AddClaim(now - std::chrono::seconds(10 * i - 5), 12);
  Observation o = Observe(now, 3, 3, 3);
  o.forecast = ForecastFor(p, d, now);
  ASSERT_TRUE(o.forecast);
  Decision up = Decide(p, o, Fresh(now - 1h));
  EXPECT_EQ(up.replicas, 12);
  EXPECT_EQ(up.source, Source::kPredictive);
  EXPECT_NE(up.reason.find("predicted demand"), std::string::npos);
  // Claims older than the lookback are forgotten: the forecast falls to nothing, and the
  // scale-down waits out its window since the last scale.
  Memory m = Fresh(now - 2h);
  m.last_scale = now;
  Observation later = Observe(now + 2h, 12, 12, 12);
  later.forecast = ForecastFor(p, d, now + 2h);
  EXPECT_EQ(later.forecast->replicas, 0);
  EXPECT_EQ(Decide(p, later, m).replicas, 0);
}

TEST(AutoscalePolicyTest, SuspendIsTheControllersButCompileKeepsIt) {
  api::PoolAutoscalerSpec spec;
  spec.max_replicas = 5;
  spec.suspend = true;
  api::CronScalingPolicy c;
  c.name = "x";
  c.schedule = "0 0 * * *";
  c.time_zone = "Europe/Berlin";
  c.target_replicas = 2;
  spec.cron_policies.push_back(c);
  auto p = CompilePolicy(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_TRUE(p->suspend);
  EXPECT_EQ(p->cron[0].schedule.time_zone().name(), "Europe/Berlin");
  spec.cron_policies[0].time_zone = "Nowhere/Atlantis";
  auto bad = CompilePolicy(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("cron policy \"x\""), std::string::npos);
}

}  // namespace
}  // namespace warren::controller::autoscale
