#pragma once

#include <chrono>
#include <cstdint>

#include "controller/autoscale_policy.h"
#include "demand_trace.h"

namespace warren::bench {

// What the simulated node can do: a new member is Ready `cold_ms` after its create starts, and
// creates start at most `creates_per_second` (the node's throughput, shared with the cold
// creates of claims that found the pool empty).
struct SimNode {
  double cold_ms = 130;
  double creates_per_second = 89;
};

struct SimResult {
  int64_t claims = 0;
  int64_t cold = 0;                // claims that found no available member
  double idle_member_seconds = 0;  // ∫ available members dt
  int32_t peak_pool = 0;           // most members (creating + available) at once
  int64_t scale_events = 0;        // spec.replicas writes
};

// Replays `trace` through a simulated SandboxSet (members created to spec.replicas through the
// node, deleted Creating-first on a scale-down, a claim taking an available member and the set
// refilling at once) sized by the autoscaler's own decision code: every `interval` the sampler
// observes the set, PoolDemand forecasts (refill times measured from the simulated members, as
// the controller measures real ones) and autoscale::Decide chooses spec.replicas. Simulated
// clock; deterministic.
SimResult Simulate(const DemandTrace& trace, const controller::autoscale::Policy& policy,
                   const SimNode& node, int32_t initial_replicas,
                   std::chrono::seconds interval = std::chrono::seconds(5));

}  // namespace warren::bench
