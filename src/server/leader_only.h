#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "controller/leader/leader_elector.h"
#include "controller/leader/replica_liveness.h"
#include "server/component.h"
#include "store/store.h"

namespace warren::server {

// Whether the server is the only replica there can be: the embedded SQLite store is one
// process's (an etcd store may be shared by several servers).
bool IsSingleReplica(const std::string& store_url);

// The default --replica-name: "<hostname>-<port>", stable across restarts of a replica on the
// same host and port (its janitor then knows its earlier run's claims); "<hostname>-pid<pid>"
// for an ephemeral port.
std::string DefaultReplicaName(uint16_t port);
// A replica name goes into claim locks and a Lease name: 1-128 characters of [A-Za-z0-9.:_-].
Status ValidateReplicaName(std::string_view name);

struct ReplicaOptions {
  std::string name;  // the replica's identity
  // Several replicas share the store: elect a leader, keep a liveness lease. False for the
  // embedded store, where the one server leads from the start and needs no lease.
  bool elect = true;
  std::chrono::milliseconds lease_duration{15000};
};

// This replica's liveness Lease (`warren-system/replica-<name>`), renewed every third of its
// duration from Start and released at Stop, and the view of the other replicas' leases that the
// claimer's janitor asks (controller/leader/replica_liveness.h). Add it before the parts that
// claim, so it is renewed before the first claim and released after the last. Without
// `elect` it does nothing and liveness() is null. Thread-safe after Start.
class ReplicaLease final : public Component {
 public:
  ReplicaLease(store::Store& store, ReplicaOptions options, base::Clock& clock = base::RealClock());
  ~ReplicaLease() override;
  std::string_view name() const override { return "replica-lease"; }
  Status Start() override;
  void Stop() override;

  controller::leader::ReplicaLiveness* liveness() { return liveness_.get(); }

 private:
  std::unique_ptr<controller::leader::LeaderElector> elector_;
  std::unique_ptr<controller::leader::ReplicaLiveness> liveness_;
};

// Parts that must have one writer among the replicas (the controllers), run only on the replica
// holding the Lease `warren-system/warren-controller-manager`: `make` builds them afresh each
// time this replica becomes the leader, and they are started (in order, on a thread of this
// component's, so the renewals never wait for them) and, when leadership is lost, stopped
// (in reverse order, before the renew deadline lets another replica take the lease) and
// destroyed. Stop stops them, then releases the Lease, so a successor takes over at once.
// Without `elect` (one embedded server) they are built and started at Start, like any part.
// Start/Stop from one thread.
class LeaderOnly final : public Component {
 public:
  using Factory = std::function<std::vector<std::unique_ptr<Component>>()>;

  LeaderOnly(store::Store& store, Factory make, ReplicaOptions options,
             base::Clock& clock = base::RealClock());
  ~LeaderOnly() override;
  std::string_view name() const override { return "leader-only"; }
  Status Start() override;
  void Stop() override;
  // Whether this replica runs the parts now.
  bool Leading() const;

 private:
  Status StartTerm();
  void StopTerm();
  void Worker();

  Factory make_;
  const ReplicaOptions options_;
  std::unique_ptr<controller::leader::LeaderElector> elector_;

  std::mutex term_mu_;                             // held while the parts start or stop
  std::vector<std::unique_ptr<Component>> parts_;  // guarded by term_mu_

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool want_ = false;      // guarded by mu_: leadership as last reported
  bool running_ = false;   // guarded by mu_: parts_ started
  bool stopping_ = false;  // guarded by mu_
  std::thread worker_;
};

}  // namespace warren::server
