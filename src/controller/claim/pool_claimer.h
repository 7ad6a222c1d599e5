#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>

#include "base/clock.h"
#include "controller/claim/claim_metrics.h"
#include "controller/claim/claimer.h"
#include "controller/claim/pool_index.h"
#include "controller/claim/sandbox_connector.h"
#include "controller/leader/replica_liveness.h"
#include "controller/pool_informers.h"
#include "controller/quota_gate.h"

namespace warren::controller::claim {

struct PoolClaimerOptions {
  int max_conflicts = 32;  // lost compare-and-swaps before a claim gives up (Aborted)
  std::chrono::milliseconds init_timeout{2000};  // one envd /init
  // The claim-pending deadline is the claim's own deadline plus this, so a claimer that is
  // still working never has its claim rolled back under it.
  std::chrono::milliseconds pending_grace{5000};
  std::chrono::milliseconds janitor_period{1000};
  // A claim that has to create (createOnNoStock) reserves its sandbox here. Borrowed; null =
  // no quota.
  QuotaGate* quota = nullptr;
  // The server replica this claimer runs in, named in every claim's lock (NewClaimLock). It
  // keeps its name across restarts, so its janitor knows its own earlier run's claims.
  std::string replica;
  // Other replicas' liveness (several servers over one store). Borrowed; null = this claimer is
  // the store's only writer (one embedded server), and every pending claim of an earlier run is
  // abandoned.
  leader::ReplicaLiveness* liveness = nullptr;
};

// The claim fast path (contracts.md "Claims", reference §3.9):
//   1. pick an Available member of the pool from the in-memory index (no store read);
//   2. one compare-and-swap Update on the member's cached resourceVersion that detaches it
//      (pool owner reference removed, sandbox-claimed=true, claim timestamp, owner, lock, the
//      caller's labels/annotations/timers, the token and /init body, and a claim-pending
//      deadline). A conflict means someone else changed it first: pick again;
//   3. envd /init with the caller's env vars, access token and defaults (no process starts);
//   4. the route hook (the gateway's route table), so the first request never sees a 502;
//   5. commit: remove claim-pending (read, check the lock is still ours, Update). Only then is
//      the sandbox handed to the caller.
// A claim that dies between 2 and 5 leaves claim-pending behind; the janitor rolls such
// claims back — the sandbox's envd is reset and it returns to its pool (or is deleted when it
// cannot be) — or commits them when envd shows they reached /init (see ResolveAbandoned):
//   - at once when this replica made it in an earlier run (its lock names this replica, or
//     this claimer is the store's only writer; claim-timestamp before our start; not in flight
//     here);
//   - a claim another replica made: only once its deadline has passed and that replica is dead
//     (its liveness Lease expired or released), never while it may still finish it;
//   - any other (ours, or one naming no replica) once its deadline passes.
// Every janitor write is a compare-and-swap, so of several janitors one resolves a claim. So a
// claim never strands a member, and a sandbox is handed out once.
// With no running member but a hibernated one (paused while idle), step 1 takes that one and
// step 2's compare-and-swap also unpauses it; the claim waits until the node has woken it
// (Running, Ready) before step 3. A claim with an in-place update never takes one.
// With nothing in stock the claim creates a sandbox from the pool's template
// (createOnNoStock, lock type "create"), waits for it to be Ready, and finishes the same way.
// A failure after step 2 (envd /init, the deadline) deletes the sandbox: the pool refills.
//
// Borrows the informers (the index's handler is added in the constructor, before they start)
// and the connector (may be null: no /init, for a server without a node agent). Thread-safe;
// Claim may be called from many threads. Start/Stop run the janitor.
class PoolClaimer final : public Claimer {
 public:
  using RouteHook = std::function<void(const api::Object& sandbox)>;

  PoolClaimer(PoolInformers& informers, SandboxConnector* connector, RouteHook on_claimed,
              PoolClaimerOptions options = {}, base::Clock& clock = base::RealClock());
  ~PoolClaimer() override;

  Result<ClaimResult> Claim(const ClaimRequest& request) override;

  // The janitor (informers must be started).
  Status Start();
  // Stops the janitor and makes claims in flight give up their waits (Unavailable): call it
  // before stopping whatever calls Claim.
  void Stop();
  // One janitor pass: rolls back expired or orphaned pending claims. Returns how many.
  int RollBackAbandonedClaims();

  PoolIndex& index() { return index_; }

 private:
  using Deadline = std::chrono::steady_clock::time_point;
  // `*deferred` is set when the commit was handed to the committer thread.
  Result<ClaimResult> DoClaim(const ClaimRequest& request, Deadline deadline,
                              base::WallTime pending_deadline, const std::string& lock,
                              bool* deferred);
  Result<ClaimResult> ColdCreate(const ClaimRequest& request, const api::Object& set,
                                 Deadline deadline, base::WallTime pending_deadline,
                                 const std::string& lock, bool* deferred);
  // Waits until the node has the sandbox it was just written as Running and Ready (a cold
  // create, a hibernated member woken): the sandbox as it is then. On a failure the sandbox is
  // deleted and the error names why, calling it the sandbox `what` ("created for the claim").
  Result<api::Object> WaitRunning(const api::Object& written, const ClaimRequest& request,
                                  Deadline deadline, std::string_view what);
  // Steps 3-5 for a sandbox claimed under `lock`.
  // Waits in slices (a shutdown is noticed) until `settle` holds on the cache, at most `wait`;
  // whether it held (it is asked once more at the end).
  bool WaitSettled(Informer& cache, const std::function<bool()>& settle,
                   std::chrono::milliseconds wait);
  // Waits until the node has made the claim's in-place update (status.updateRevision ==
  // `revision`, Ready): the sandbox as it is then. On a failure the sandbox is deleted and the
  // error names why.
  Result<api::Object> WaitInplaceUpdated(const api::Object& claimed, const std::string& revision,
                                         const ClaimRequest& request, Deadline deadline);
  Result<api::Object> Finish(const api::Object& claimed, const ClaimRequest& request,
                             Deadline deadline, const std::string& lock,
                             const std::string& pool_token, bool* deferred);
  // Hands a commit to the committer thread; false when it is not running.
  bool EnqueueCommit(const api::Object& claimed, Deadline deadline, const std::string& lock);
  void CommitterLoop();
  // A pending claim nobody is finishing: committed when envd holds its token (it was
  // initialised, so it may have been answered), rolled back when it does not.
  Status ResolveAbandoned(const api::Object& sandbox, base::WallTime now);
  Result<api::Object> Commit(api::Object claimed, Deadline deadline, const std::string& lock);
  // Logs the failed claim at warning (sandbox, `step`, cause) and deletes the sandbox it took.
  void DeleteFailed(const api::Object& sandbox, std::string_view step, const Status& why);
  Status RollBack(const api::Object& sandbox);
  void JanitorLoop();

  PoolInformers& informers_;
  store::Store& store_;
  SandboxConnector* connector_;
  RouteHook on_claimed_;
  PoolClaimerOptions options_;
  base::Clock& clock_;
  PoolIndex index_;
  ClaimMetrics metrics_;
  base::WallTime started_at_;

  std::mutex mu_;
  std::unordered_set<std::string> in_flight_;  // locks of claims running here; guarded by mu_

  struct QueuedCommit {
    api::Object claimed;
    Deadline deadline;
    std::string lock;
  };
  std::mutex commit_mu_;
  std::condition_variable commit_cv_;
  std::deque<QueuedCommit> commits_;  // guarded by commit_mu_
  bool committer_running_ = false;    // guarded by commit_mu_
  std::thread committer_;

  std::thread janitor_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;               // guarded by stop_mu_
  std::atomic<bool> cancelled_{false};  // claims stop waiting
};

}  // namespace warren::controller::claim
