#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>

#include "base/clock.h"

namespace warren::controller {

// One pool's recent claims and refill times, the inputs of the predictive policy
// (api::PredictivePolicy). The controller feeds it from Sandbox changes (a member turning
// claimed, whether by the E2B create's claimer or a SandboxClaim, both of which write
// agents.kruise.io/sandbox-claimed=true; a member turning Ready); bench/autoscaler feeds it from
// a replayed trace. Thread-compatible: the owner locks.
//
// Each claim is recorded with the pool size it needed: with spec.replicas R and `available`
// members left when it came, a pool larger by x would have had x more available (the same
// claims and refills otherwise), so it needed R - available + 1; a claim that found none needed
// R + 1 + the claims that found none just before it. This measures everything that delays a
// refill (the set putting refills off during a burst, the node's create queue) rather than
// modelling it. The sizes live in a histogram, so a forecast costs the number of distinct sizes,
// not the number of claims.
class PoolDemand {
 public:
  using Ms = std::chrono::milliseconds;

  // Claims come in time order (a late one is counted as arriving at the latest time seen).
  void AddClaim(base::WallTime at, int32_t needed);
  // The size a claim needed (see the class comment): `cold_streak` is the number of claims
  // that found the pool empty since one last found a member, this one included if it did.
  static int32_t Needed(int32_t spec_replicas, int32_t available_before, int32_t cold_streak) {
    return available_before > 0 ? spec_replicas - available_before + 1
                                : spec_replicas + cold_streak;
  }
  // How long a member took from creation to Ready.
  void AddRefill(Ms took);
  // Forgets claims at or before `before`.
  void Prune(base::WallTime before);

  // The 90th percentile of the last 64 refill times, or nullopt with none recorded.
  std::optional<Ms> RefillP90() const;
  size_t claims() const { return claims_.size(); }

  struct Forecast {
    int32_t replicas = 0;            // the pool size asked for
    int32_t claims_in_lookback = 0;  // claims it was read from
    double claims_per_hour = 0;      // the rate it expects
    Ms horizon{0};                   // the refill horizon used
  };
  // The pool size for the demand to come. At the claim rate of the last `rate_window` (the
  // median of its minutes, so a burst does not read as a new level of traffic),
  // `cold_per_hour` cold creates are a share of the claims to come; the size is the smallest at
  // which no more than that share of the recorded claims needed more. Minimising cold creates
  // plus a price on idle members gives this rule: the share left uncovered shrinks as the rate
  // grows, so idle members sit where claims are many and few sit through a quiet night. Or more,
  // when the rate of the last minute needs more over a horizon (with a margin of two standard
  // deviations of a Poisson count): the history lags a rising rate. Deterministic.
  Forecast Predict(base::WallTime now, std::chrono::seconds rate_window, double cold_per_hour,
                   Ms horizon) const;

 private:
  struct Claim {
    base::WallTime at;
    int32_t needed;
  };
  std::deque<Claim> claims_;          // ascending times
  std::map<int32_t, int64_t> sizes_;  // needed size → claims recorded with it
  std::deque<Ms> refills_;
};

}  // namespace warren::controller
