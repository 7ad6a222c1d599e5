#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

#include "api/object.h"
#include "api/types/lease.h"
#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace warren::controller::leader {

// The controllers' leader lease, and the prefix of each replica's liveness lease
// ("replica-<name>"), both in api::kSystemNamespace.
inline constexpr const char* kControllerLeaseName = "warren-controller-manager";
inline constexpr const char* kReplicaLeasePrefix = "replica-";
// "replica-<name>" with the name made a valid object name (lower case; anything but [a-z0-9.-]
// becomes '-').
std::string ReplicaLeaseName(std::string_view replica);

struct LeaderElectorOptions {
  std::string namespace_ = api::kSystemNamespace;
  std::string name;      // the Lease's name
  std::string identity;  // spec.holderIdentity when we hold it: the replica's name
  // How long a holder's renew keeps others out: another candidate takes the lease only after it
  // has seen the same record unchanged for this long (by its own monotonic clock, as client-go).
  std::chrono::milliseconds lease_duration{15000};
  // The holder gives up leading when no renew has succeeded for this long, counted from the
  // start of its last successful renew by its own monotonic clock. Shorter than lease_duration,
  // so the holder stops before anyone else can start. 0 = two thirds of lease_duration.
  std::chrono::milliseconds renew_deadline{0};
  // How often the holder renews, and a candidate tries. 0 = a third of lease_duration.
  std::chrono::milliseconds retry_period{0};
  // Leadership callbacks, called from the elector's threads one at a time: started, then (when
  // the lease is lost or at Stop) stopped, possibly again and again. They must return quickly
  // (hand slow work to a thread of their own): the renew that follows waits for them. Stopped
  // is called at the renew deadline, before another replica can take the lease.
  std::function<void()> on_started_leading;
  std::function<void()> on_stopped_leading;
};

// Leader election on a Lease (client-go's leaderelection over coordination.k8s.io/v1 Leases):
// every write is a compare-and-swap on the Lease's resourceVersion, so two candidates never
// both think they took it. A candidate takes a Lease that is absent, released (no holder), held
// by its own identity (a restarted replica), or whose record it has watched stay unchanged for
// lease_duration. The holder renews every retry_period; it stops leading when a renew has not
// succeeded within renew_deadline (a watchdog thread checks this even while a store call hangs),
// and on Stop it releases the Lease (holder cleared) so a successor takes it at once.
//
// Also the liveness lease of a replica: the same loop with no callbacks (see ReplicaLiveness).
//
// Borrows the store and the clock. Thread-safe. TryAcquireOrRenew and CheckRenewDeadline are
// the loop's steps, public so tests can drive them with a FakeClock instead of Start.
class LeaderElector {
 public:
  LeaderElector(store::Store& store, LeaderElectorOptions options,
                base::Clock& clock = base::RealClock());
  ~LeaderElector();
  LeaderElector(const LeaderElector&) = delete;
  LeaderElector& operator=(const LeaderElector&) = delete;

  // Starts the election loop and the watchdog.
  Status Start();
  // Stops leading (on_stopped_leading when leading), releases the Lease when held, joins.
  void Stop();

  // Whether this replica leads now: it won, and its last successful renew is within the renew
  // deadline.
  bool IsLeader() const;
  const std::string& identity() const { return options_.identity; }

  // One step of the loop: takes or renews the Lease; whether we hold it now. Starts leading
  // (callback) when it is newly taken.
  bool TryAcquireOrRenew();
  // Stops leading (callback) when the renew deadline has passed; whether it did.
  bool CheckRenewDeadline();
  // Clears the holder when we hold it (the Lease stays, so its transitions count on).
  Status Release();

 private:
  enum class Outcome { kHeld, kHeldByOther, kFailed };
  Outcome TryOnce();
  void BecomeLeader();
  void StopLeading(std::string_view why);
  void Loop();
  void Watchdog();

  store::Store& store_;
  const LeaderElectorOptions options_;
  const std::chrono::milliseconds renew_deadline_;
  const std::chrono::milliseconds retry_period_;
  base::Clock& clock_;

  // Serialises the callbacks (and the leading_ transitions they follow).
  std::mutex callback_mu_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool leading_ = false;                 // guarded by mu_
  base::MonoTime last_renew_{};          // start of the last successful write; guarded by mu_
  std::optional<api::Object> observed_;  // the Lease as last read or written; guarded by mu_
  base::MonoTime observed_at_{};         // when observed_'s record last changed; guarded by mu_
  bool stopping_ = false;                // guarded by mu_
  std::thread loop_;
  std::thread watchdog_;
};

}  // namespace warren::controller::leader
