#pragma once

#include <chrono>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "store/store.h"

namespace warren::controller::leader {

// Whether another replica is alive, judged from its liveness Lease (`replica-<name>` in
// api::kSystemNamespace, renewed by that replica's LeaderElector) the way a candidate judges a
// leader lease: dead when the Lease is absent, released (no holder), or its record has stayed
// unchanged, as seen by this process's monotonic clock, for its leaseDurationSeconds. Clocks of
// different machines are never compared; the price is that a replica first seen now counts as
// alive for one whole duration. A store error counts as alive (nothing is resolved on a guess).
//
// Borrows the store and the clock. Thread-safe.
class ReplicaLiveness {
 public:
  explicit ReplicaLiveness(store::Store& store, std::chrono::milliseconds default_duration,
                           base::Clock& clock = base::RealClock());

  bool IsAlive(std::string_view replica);

 private:
  struct Seen {
    int64_t resource_version = 0;
    base::MonoTime since{};
  };

  store::Store& store_;
  const std::chrono::milliseconds default_duration_;
  base::Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Seen, std::less<>> seen_;  // by replica; guarded by mu_
};

}  // namespace warren::controller::leader
