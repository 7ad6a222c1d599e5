#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include "base/clock.h"
#include "controller/informer.h"
#include "controller/quota_gate.h"
#include "obs/event_recorder.h"
#include "obs/metrics.h"
#include "server/component.h"
#include "server/quota/circuit_breaker.h"
#include "server/quota/ledger.h"
#include "store/store.h"

namespace warren::server::quota {

struct QuotaOptions {
  // Where the ledger lives: "" = this process (embedded), else a Redis "host:port".
  std::string redis_address;
  std::chrono::milliseconds redis_timeout{50};  // connect and each command
  CircuitBreaker::Options breaker;
  // Anti-drift: the ledger is made to match the store this often (and at start, and as soon as
  // the backend answers again after failing), keeping reservations younger than `grace` whose
  // object is not in the store yet (a create between its reservation and its write).
  std::chrono::milliseconds reconcile_interval{30'000};
  std::chrono::milliseconds grace{10'000};
  // How often ResourceQuota status.used is brought up to date (when it changed).
  std::chrono::milliseconds status_interval{1'000};
};

// Per-team quota (issue: tenancy; reference openkruise-agents.md §3.10), as the
// controller::QuotaGate every create path calls, and a server component that keeps the ledger
// true:
//   - limits come from the namespace's ResourceQuota objects (a cache of them); a namespace
//     with none is unlimited and costs no ledger call;
//   - Reserve checks and records in one atomic ledger call; a backend that fails is cut off by
//     a circuit breaker, and a create then goes on without a reservation (fail-open:
//     warren_quota_decisions_total{result="fail_open"}, and a Warning Event
//     QuotaNotEnforced on the namespace's ResourceQuota);
//   - a sandbox's end (deleted, or Failed/Succeeded) releases it, from a watch of every Sandbox;
//     a release that fails is left to the next reconcile;
//   - reconcile rebuilds every limited namespace's entries from the store (crash recovery at
//     start, drift, a Redis that was away or was flushed);
//   - ResourceQuota status shows hard and used.
// Thread-safe. Borrows the store and the clock. Owns its informers, its ledger and one worker
// thread (releases, reconciles, status writes).
class QuotaService final : public controller::QuotaGate, public Component {
 public:
  static Result<std::unique_ptr<QuotaService>> Create(store::Store& store, QuotaOptions options,
                                                      base::Clock& clock = base::RealClock());
  ~QuotaService() override;

  // controller::QuotaGate.
  Status Reserve(const api::Object& sandbox) override;
  void Release(std::string_view namespace_, std::string_view name) override;
  void AwaitQuotaRevision(int64_t revision) override;

  // Component.
  std::string_view name() const override { return "quota"; }
  Status Start() override;
  void Stop() override;

  // What the ledger holds for a namespace (tests, status).
  Result<Usage> UsageOf(std::string_view namespace_) { return ledger_->UsageOf(namespace_); }
  // Reconciles every limited namespace now (tests; the worker does it on its own).
  Status ReconcileNow();
  const Ledger& ledger() const { return *ledger_; }

 private:
  QuotaService(store::Store& store, QuotaOptions options, base::Clock& clock,
               std::unique_ptr<Ledger> ledger);
  Limits LimitsFor(std::string_view ns) const;
  // What the sandbox holds (its template inline, or the SandboxTemplate it references).
  api::SandboxFootprint FootprintOf(const api::Object& sandbox) const;
  void OnSandboxChange(const controller::Informer::Change& change);
  void OnQuotaChange(const controller::Informer::Change& change);
  // A backend call through the breaker; false when it may not be made or failed.
  bool CallLedger(const std::function<Status()>& call, std::string_view ns);
  void FailedOpen(std::string_view ns, const Status& why);
  void ReleaseLock(const std::string& ns, const std::string& lock);
  void Worker();
  void WriteStatuses();

  store::Store& store_;
  const QuotaOptions options_;
  base::Clock& clock_;
  std::unique_ptr<Ledger> ledger_;
  CircuitBreaker breaker_;
  obs::EventRecorder events_;
  obs::CounterFamily& decisions_;
  obs::CounterFamily& backend_errors_;
  std::unique_ptr<controller::Informer> quotas_;
  std::unique_ptr<controller::Informer> sandboxes_;

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::pair<std::string, std::string>> releases_;  // guarded by mu_: ns, lock
  bool reconcile_due_ = true;                                 // guarded by mu_
  bool status_due_ = true;                                    // guarded by mu_
  bool stopping_ = false;                                     // guarded by mu_
  std::set<std::string> failed_open_;  // guarded by mu_: namespaces told since the last recovery
  // guarded by mu_: "<ns>/<name>" of sandboxes that ended (or whose create failed) while the
  // ledger could not be told; the next reconcile drops them whatever their age.
  std::map<std::string, std::set<std::string>> unreleased_;
  std::map<std::string, std::string> written_status_;  // worker only: last status.used written
  std::thread worker_;
};

}  // namespace warren::server::quota
