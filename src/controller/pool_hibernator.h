#pragma once

#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/status.h"
#include "controller/informer.h"
#include "controller/pool_informers.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"

namespace warren::controller {

// Pauses pool members nobody claimed for their spec.pauseStrategy.idleSeconds (the set's
// pauseStrategy, copied to each member), so an idle pool holds no running processes: the pause
// its strategy says (memory kept — frozen on native, written to disk on gVisor — or, with type
// Stop, files only). The member stays the pool's stock (MemberState::kHibernated: no refill);
// a claim takes it only when no running member is left, and wakes it (PoolClaimer).
//
// Idle means available and unclaimed since this controller first saw it so (a member's
// traffic is closed until it is claimed, so nothing else can use it meanwhile); a member back
// from a rolled-back claim or a recycle starts over. The pause is one compare-and-swap on the
// version the controller saw available, so a claim that wrote first wins and the pause is
// dropped. Borrows the informers (the handler is added in the constructor, before they start)
// and `events` (may be null). Start/Stop from one thread.
class PoolHibernator {
 public:
  PoolHibernator(PoolInformers& informers, obs::EventRecorder* events);
  ~PoolHibernator();

  Status Start();
  void Stop();

 private:
  using Steady = std::chrono::steady_clock;

  void OnSandbox(const Informer::Change& change);
  void Worker();
  Status Reconcile(const std::string& key);

  PoolInformers& informers_;
  store::Store& store_;
  obs::EventRecorder* events_;
  WorkQueue queue_;
  std::mutex mu_;
  std::unordered_map<std::string, Steady::time_point> idle_since_;  // by "ns/name"; mu_
  std::thread worker_;
};

}  // namespace warren::controller
