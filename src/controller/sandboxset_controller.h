#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "controller/own_write_fence.h"
#include "controller/pool_informers.h"
#include "controller/quota_gate.h"
#include "controller/sandboxset_member.h"
#include "controller/sandboxset_member_index.h"
#include "controller/sandboxset_metrics.h"
#include "controller/work_queue.h"
#include "obs/event_recorder.h"

namespace warren::controller {

// The cores this process may run on (its CPU affinity), at least 1.
int DefaultRefillsWhileClaiming();

struct SandboxSetControllerOptions {
  int workers = 3;               // sets reconciled in parallel (one set is never in two)
  int initial_batch_size = 16;   // slow start: 16, 32, 64, ... creates per batch
  int create_parallelism = 8;    // creates in flight within a batch
  size_t revision_history = 10;  // materialized SandboxTemplates kept per set
  std::chrono::seconds resync_period{30};
  // How long a reconcile waits for its own writes to reach the cache before it returns; the next
  // reconcile of the set waits for any it did not see, so it never counts from a cache that
  // misses them.
  std::chrono::milliseconds write_visible_timeout{2000};
  // Refills wait until claims from the pool pause for `refill_quiet` (but never longer than
  // `refill_max_delay`): starting sandboxes costs CPU, and a burst of claims should not compete
  // with its own refills. Zero refills at once.
  std::chrono::milliseconds refill_quiet{100};
  std::chrono::milliseconds refill_max_delay{1000};
  // Past refill_max_delay, while claims still arrive, at most this many members are Creating
  // at once (by default one per core this server may run on: on one machine, what it can start
  // beside the claims it serves); the rest follow when the claims pause. Zero = no limit.
  int refills_while_claiming = DefaultRefillsWhileClaiming();
  // While claims arrive (within refill_quiet of the last), the set's status is written at most
  // this often: every claim changes its counts, and a write per claim costs the store and every
  // watcher more than the claim's own. The counts then lag the claims by at most this much,
  // and never once the pool has no member left to claim. Zero writes after every change.
  std::chrono::milliseconds claim_status_interval{100};
  // Every member made reserves its CPU and memory here first (a pool holds them from the
  // start). Borrowed; null = no quota.
  QuotaGate* quota = nullptr;
};

// Keeps each SandboxSet's pool at spec.replicas members that are Running, Ready and unclaimed
// (reference §2.3):
//   - scale up by slow start (batches of 16, doubling; a batch with a failed create ends the
//     pass), never more members Creating at once than scaleStrategy.maxUnavailable;
//   - scale down old-revision members first, then Pending, recycled (most recycled first),
//     running-but-not-ready, available; oldest first within each. Every victim is deleted with
//     its cached resourceVersion as a precondition, checked by the store under its write lock:
//     a member claimed meanwhile has a newer version, so its delete fails and it is skipped —
//     a claimed sandbox is never deleted by a scale-down;
//   - template revisions: the template's hash names a SandboxTemplate `<sbs>-<hash>` owned by
//     the set (the last `revision_history` kept, older ones deleted once no sandbox refers to
//     them); members are made from it;
//   - rolling update: old-revision members still Creating are deleted at once; old Available
//     ones, oldest first, only when the pool is at size, at most updateStrategy.maxUnavailable
//     (default 20%) minus the updated members still Creating at a time; replacements come from
//     the next scale-up. Claimed sandboxes are never touched;
//   - dead members (Failed, Succeeded) are deleted and replaced;
//   - refills after claims wait for a pause in the claims (refill_quiet); past
//     refill_max_delay of claims they trickle (refills_while_claiming at once), so a burst of
//     claims is not slowed by its own refills and a steady claim rate never drains the pool;
//   - status: replicas, availableReplicas, updatedReplicas, updatedAvailableReplicas,
//     updateRevision (hash), currentRevision (template name), selector, observedGeneration,
//     conditions Ready (pool full) and ReplicaFailure (a create or the template failed).
//
// Borrows the informers (handlers added in the constructor, before they start), the event
// recorder (may be null) and the metrics. Thread-safe; Start/Stop from one thread.
class SandboxSetController {
 public:
  SandboxSetController(PoolInformers& informers, obs::EventRecorder* events,
                       SandboxSetControllerOptions options = {},
                       base::Clock& clock = base::RealClock());
  ~SandboxSetController();

  // Starts the workers (the informers must be started).
  Status Start();
  void Stop();

  // One reconcile of the set, on the caller's thread (what workers run).
  Status Reconcile(std::string_view namespace_, std::string_view name);

  // Members of the set with this uid, from the cache.
  std::vector<ObjectPtr> MembersOf(const std::string& set_uid) const;

 private:
  struct Counts;
  void OnSandbox(const Informer::Change& change);
  void OnTemplate(const Informer::Change& change);
  void Worker();
  void ResyncLoop();
  // How much of a refill of the set may start now: all, none until the claims pause (it is
  // requeued for then), or a trickle while they go on past refill_max_delay.
  enum class RefillPace { kAll, kLater, kTrickle };
  RefillPace PaceRefill(const std::string& key);
  Status EnsureRevisionTemplate(const api::Object& set, const TemplateRevision& revision,
                                int64_t& last_write);
  int ScaleUp(const api::Object& set, const TemplateRevision& revision, int count,
              int64_t& last_write, std::string& first_error);
  // Deletes each victim (with its cached version as a precondition when `check_version`);
  // raises `last_write` to each delete's revision. Returns how many.
  int DeleteMembers(const std::vector<ObjectPtr>& victims, bool check_version, int64_t& last_write);
  void CollectRevisions(const api::Object& set, const TemplateRevision& current,
                        int64_t& last_write);
  Status WriteStatus(const api::Object& set, const TemplateRevision* revision, int32_t desired,
                     const std::string& failure_reason, const std::string& failure_message);
  // `latest` with the status this reconcile found (and the gauges set from it).
  api::Object WithStatus(const api::Object& latest, const api::Object& set,
                         const TemplateRevision* revision, int32_t desired,
                         const std::string& failure_reason, const std::string& failure_message);

  PoolInformers& informers_;
  store::Store& store_;
  obs::EventRecorder* events_;
  SandboxSetControllerOptions options_;
  base::Clock& clock_;
  SandboxSetMetrics metrics_;
  WorkQueue queue_;

  // Members by their set's uid, with their counts; maintained from sandbox events.
  SetMemberIndex members_;
  // By set key: its member writes the sandbox cache had not shown when we stopped waiting.
  OwnWriteFence own_writes_;
  mutable std::mutex mu_;
  // By set key: when a member was last claimed, and since when a refill has been put off.
  std::unordered_map<std::string, std::chrono::steady_clock::time_point>
      last_claim_;  // guarded by mu_
  std::unordered_map<std::string, std::chrono::steady_clock::time_point>
      refill_deferred_since_;  // guarded by mu_
  // By set key: the set as our last status write left it, until the cache catches up.
  std::unordered_map<std::string, ObjectPtr> written_sets_;  // guarded by mu_
  std::unordered_map<std::string, std::chrono::steady_clock::time_point>
      status_written_at_;  // guarded by mu_

  std::vector<std::thread> workers_;
  std::thread resync_;
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;  // guarded by stop_mu_
};

}  // namespace warren::controller
