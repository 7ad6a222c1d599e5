#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <queue>
#include <string>
#include <thread>
#include <vector>

#include "api/types/common.h"
#include "base/clock.h"
#include "node/probe_runner.h"
#include "node/probe_state.h"

namespace warren::node {

// What one sandbox's probes are, resolved from its objects once per start (probe_hooks.cc).
struct ProbeConfig {
  struct Entry {
    std::string name;                        // a sandbox probe's name; empty for a container probe
    std::optional<ContainerProbeKind> kind;  // set for a container probe
    ProbeAction action;
    api::ProbeTimings timings;
  };
  std::vector<Entry> entries;
  // The container probes as written (ContainerProbeState is built from them).
  std::optional<api::Probe> startup, readiness, liveness;
  // spec.probes: whether there are any, and why some cannot run ("" = all valid) → ProbeValid.
  bool has_sandbox_probes = false;
  std::string invalid;
  // spec.autoPausePolicy.pause.whenProbedIdleState, when set and its probe runs.
  struct Idle {
    std::string probe;
    std::string message_regex;
    std::chrono::nanoseconds threshold{0};
  };
  std::optional<Idle> idle;
};

// What the node agent's reconcile reads of a sandbox's probes.
struct ProbeView {
  bool tracked = false;
  bool ready = true;  // as probes see it (no probes: true)
  std::string not_ready_reason, not_ready_message;
  std::vector<api::Condition> conditions;  // agents.kruise.io/<probe> and ProbeValid
};

// Runs every sandbox's probes on their periods: one timer heap for all of them and a few
// threads that take the due runs from it (never a thread per sandbox), with decisions made by
// probe_state.h. When something the status shows changes (Ready, a sandbox probe's condition)
// or an action is due (a kill, an auto-pause) it calls `notify(key)`, and the sandbox's
// reconcile reads View / TakeKill / TakePause and acts: the prober writes nothing itself.
//
// Ownership: `target` and `notify` are the node agent's and outlive the prober. Thread-safety:
// every public method is thread-safe; `notify` and `target` are called on probe threads without
// the prober's lock held.
class Prober {
 public:
  using Notify = std::function<void(const std::string& key)>;
  using TargetFn = std::function<ProbeTarget(const std::string& sandbox_id)>;

  Prober(base::Clock& clock, int threads, TargetFn target, Notify notify);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  void Start();
  void Stop();

  // Probes the sandbox from now on with fresh state (a start or a restart of its command):
  // each probe first runs after its initialDelaySeconds.
  void Track(const std::string& sandbox_id, const std::string& key, ProbeConfig config);
  // Pauses probing (the sandbox is frozen or stopped); results in flight are dropped and the
  // idle time starts over. Continue runs every probe at once and keeps the rest of the state.
  void Suspend(const std::string& sandbox_id);
  void Continue(const std::string& sandbox_id);
  void Forget(const std::string& sandbox_id);

  ProbeView View(const std::string& sandbox_id) const;
  // The kill a liveness or startup probe asked for, once ("liveness probe failed 3 times: ...").
  std::optional<std::string> TakeKill(const std::string& sandbox_id);
  // Warnings to record as Events, once each: a readiness probe that made a Ready sandbox not
  // ready ("readiness probe failed: <output>").
  std::vector<std::string> TakeWarnings(const std::string& sandbox_id);
  // The pause the AutoPausePolicy asked for, once (why, for the status).
  std::optional<std::string> TakePause(const std::string& sandbox_id);
  // Runs done so far (for the bench and tests).
  uint64_t runs() const;

 private:
  struct Sandbox {
    std::string key;
    ProbeConfig config;
    ContainerProbeState container;
    std::map<std::string, SandboxProbeState> probes;  // by sandbox probe name
    std::optional<IdleTracker> idle;
    uint64_t generation = 0;
    bool suspended = false;
    std::optional<std::string> kill;
    std::vector<std::string> warnings;
    std::optional<std::string> pause;
    bool pause_asked = false;  // until the next Continue/Track
  };
  struct Due {
    base::MonoTime at;
    std::string sandbox_id;
    size_t entry;
    uint64_t generation;
    bool operator>(const Due& o) const { return at > o.at; }
  };

  void Worker();
  void ScheduleAll(const std::string& id, const Sandbox& s, bool now);
  // Records a result; true when the reconcile must look.
  bool Record(Sandbox& s, const ProbeConfig::Entry& entry, const ProbeOutcome& outcome);

  base::Clock& clock_;
  const int threads_;
  const TargetFn target_;
  const Notify notify_;

  mutable std::mutex mu_;
  std::condition_variable wake_;  // with mu_: the heap's top changed, or stop
  std::map<std::string, Sandbox, std::less<>> sandboxes_;            // guarded by mu_
  std::priority_queue<Due, std::vector<Due>, std::greater<>> heap_;  // guarded by mu_
  uint64_t next_generation_ = 1;                                     // guarded by mu_
  uint64_t runs_ = 0;                                                // guarded by mu_
  bool stopping_ = false;                                            // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace warren::node
