#include "pool_sim.h"

#include <algorithm>
#include <deque>
#include <limits>

namespace warren::bench {
namespace {

using controller::autoscale::CapacitySampler;
using controller::autoscale::Decide;
using controller::autoscale::ForecastFor;
using controller::autoscale::Memory;
using controller::autoscale::Observation;

constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
const base::WallTime kOrigin{std::chrono::seconds(1'800'000'000)};

base::WallTime At(int64_t ms) { return kOrigin + std::chrono::milliseconds(ms); }

// The simulated SandboxSet and node. Times in ms from the trace's origin.
class Pool {
 public:
  Pool(const SimNode& node, int32_t replicas)
      : node_(node), spec_(replicas), available_(replicas) {}

  int32_t members() const { return static_cast<int32_t>(creating_.size()) + available_; }
  int32_t available() const { return available_; }
  int32_t spec() const { return spec_; }
  int64_t next_ready() const { return creating_.empty() ? kNever : creating_.front().ready; }
  int64_t refill_at() const { return refill_at_; }

  void SetSpec(int32_t replicas, int64_t now) {
    spec_ = replicas;
    if (refill_at_ == kNever || members() > spec_) Reconcile(now);
  }
  // A claim: true when it found an available member.
  bool Claim(int64_t now) {
    if (available_ == 0) {
      StartCreate(now);  // the claim's own cold create uses the node too
      return false;
    }
    --available_;
    // The SandboxSet controller's refill_quiet / refill_max_delay (100 ms, 1 s): refills wait
    // for claims to pause, so a burst does not compete with its own refills.
    if (deferred_since_ == kNever) deferred_since_ = now;
    refill_at_ = std::min(now + kRefillQuietMs, deferred_since_ + kRefillMaxDelayMs);
    return true;
  }
  void Refill(int64_t now) {
    deferred_since_ = refill_at_ = kNever;
    Reconcile(now);
  }
  // Members whose create finished by `now` become available; returns their refill times.
  template <class Fn>
  void Ready(int64_t now, Fn&& on_ready) {
    while (!creating_.empty() && creating_.front().ready <= now) {
      on_ready(creating_.front().ready - creating_.front().requested);
      creating_.pop_front();
      ++available_;
    }
  }

 private:
  struct Creating {
    int64_t ready;
    int64_t requested;
  };

  int64_t StartCreate(int64_t now) {
    double start = std::max(static_cast<double>(now), next_slot_);
    next_slot_ = start + 1000.0 / node_.creates_per_second;
    return static_cast<int64_t>(start + node_.cold_ms);
  }

  // The SandboxSet controller: as many members as spec.replicas, Creating ones removed first.
  void Reconcile(int64_t now) {
    while (members() < spec_) creating_.push_back({StartCreate(now), now});
    while (members() > spec_) {
      if (!creating_.empty()) {
        creating_.pop_back();
      } else {
        --available_;
      }
    }
  }

  SimNode node_;
  int32_t spec_;
  int32_t available_;
  static constexpr int64_t kRefillQuietMs = 100, kRefillMaxDelayMs = 1000;
  std::deque<Creating> creating_;  // ascending ready times: creates start in order
  double next_slot_ = 0;
  int64_t deferred_since_ = kNever, refill_at_ = kNever;
};

}  // namespace

SimResult Simulate(const DemandTrace& trace, const controller::autoscale::Policy& policy,
                   const SimNode& node, int32_t initial_replicas, std::chrono::seconds interval) {
  SimResult r;
  Pool pool(node, initial_replicas);
  CapacitySampler sampler(interval);
  controller::PoolDemand demand;
  Memory memory;
  memory.created = At(0);
  const int64_t interval_ms = interval.count() * 1000;
  const int64_t end = (trace.empty() ? 0 : trace.back()) + interval_ms;
  int64_t now = 0, next_tick = 0;
  size_t next_claim = 0;
  int32_t cold_streak = 0;
  r.peak_pool = pool.members();
  while (now <= end) {
    int64_t next = std::min(
        {next_tick, pool.next_ready(), next_claim < trace.size() ? trace[next_claim] : kNever});
    r.idle_member_seconds += pool.available() * static_cast<double>(next - now) / 1000.0;
    now = next;
    pool.Ready(now, [&](int64_t took) { demand.AddRefill(std::chrono::milliseconds(took)); });
    if (pool.refill_at() <= now) pool.Refill(now);
    if (next_claim < trace.size() && trace[next_claim] == now) {
      ++r.claims;
      int32_t spec = pool.spec(), available = pool.available();
      if (pool.Claim(now)) {
        cold_streak = 0;
      } else {
        ++r.cold;
        ++cold_streak;
      }
      demand.AddClaim(At(now), controller::PoolDemand::Needed(spec, available, cold_streak));
      ++next_claim;
    } else if (now == next_tick) {
      sampler.Observe(At(now), pool.available(), pool.members());
      Observation o;
      o.now = At(now);
      o.spec_replicas = pool.spec();
      o.capacity = sampler.Get();
      o.full_window = sampler.full_window();
      o.forecast = ForecastFor(policy, demand, At(now));
      auto d = Decide(policy, o, memory);
      memory.cron_last = d.cron_last;
      if (d.replicas != pool.spec()) {
        pool.SetSpec(d.replicas, now);
        memory.last_scale = At(now);
        ++r.scale_events;
      }
      next_tick += interval_ms;
    }
    r.peak_pool = std::max(r.peak_pool, pool.members());
  }
  return r;
}

}  // namespace warren::bench
