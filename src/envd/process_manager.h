#pragma once

#include <sys/types.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"
#include "envd/audit_log.h"
#include "envd/process_messages.h"
#include "envd/stream_session.h"
#include "envd/timer_queue.h"
#include "os/spawn.h"

namespace warren::envd {

// What to run, fully resolved by the service (user, cwd, environment).
struct SpawnPlan {
  StartRequest request;           // as received (List reports this config)
  std::vector<std::string> argv;  // cmd + args
  std::vector<std::string> env;   // "K=V", in precedence order already applied
  std::string cwd;                // absolute, existing
  os::Credentials credentials;
  std::string user;  // the name `credentials` belong to (for the audit log)
  // False for the node agent's probes: a probe every few seconds would push what the sandbox's
  // users did out of the bounded journal.
  bool audited = true;
};

// One process started through Start: its output fan-out to subscribers, its stdin or pty, its
// exit. Owned jointly (shared_ptr) by the manager's tables and its output pump thread.
// Thread-safe.
class ManagedProcess : public std::enable_shared_from_this<ManagedProcess> {
 public:
  uint32_t pid() const { return pid_; }
  const StartRequest& request() const { return request_; }
  bool is_pty() const { return is_pty_; }
  // How it ended, once its output is drained too; nullopt before.
  std::optional<ProcessExit> end() const {
    std::lock_guard lock(mu_);
    return end_;
  }

  // Adds a subscriber: it gets start{pid} now, then live output; when the process has already
  // ended it gets start, end and the end of the stream.
  void Subscribe(const std::shared_ptr<StreamSession>& session);

  Status WriteInput(InputKind kind, const std::string& data);
  Status CloseStdin();
  Status Resize(PtySize size);
  // Signals the process group (the process leads its own session).
  Status Signal(int signal);
  bool ended() const;

 private:
  friend class ProcessManager;
  ManagedProcess(StartRequest request, bool is_pty);
  void Pump(base::UniqueFd out, base::UniqueFd err, int pty);
  void Broadcast(const std::string& json);
  void OnExit(int wait_status);

  const StartRequest request_;
  const bool is_pty_;
  uint32_t pid_ = 0;

  mutable std::mutex mu_;
  std::condition_variable exited_cv_;
  std::vector<std::shared_ptr<StreamSession>> subscribers_;  // guarded by mu_
  std::optional<int> wait_status_;                           // guarded by mu_
  std::optional<ProcessExit> end_;                           // guarded by mu_ (exit + EOF)

  std::mutex input_mu_;   // serialises writes and closing of the input end
  base::UniqueFd stdin_;  // guarded by input_mu_ (pipe processes)
  // The pty master: the pump reads it, input and resizes use it; closed when the object dies,
  // so no thread can see the descriptor number reused.
  base::UniqueFd pty_master_;
  std::function<void()> on_ended_;  // set by the manager before the pump starts
};

// The process table of envd: starts processes, finds them by pid or tag, lists the live ones,
// keeps ended ones for 30 s so a late Connect still gets their end. Borrows `timers`, which must
// outlive it; the timers and pump callbacks it leaves behind hold only a weak_ptr to its table,
// so they do nothing once the manager is gone. Thread-safe.
class ProcessManager {
 public:
  static constexpr std::chrono::milliseconds kEndedRetention = std::chrono::seconds(30);

  // `ended_retention`: how long an ended process stays findable (tests shorten it).
  explicit ProcessManager(TimerQueue& timers,
                          std::chrono::milliseconds ended_retention = kEndedRetention);
  // Kills what still runs and waits (briefly) for the output pumps to finish.
  ~ProcessManager();
  // Records every start and end there (before the first Start; null: nowhere).
  void set_audit(AuditLog* audit) { audit_ = audit; }

  // Spawns the process and subscribes `session` before any output can be produced. With a
  // `lifetime` the process group is SIGKILLed when it passes, whoever still listens (Start's
  // Connect-Timeout-Ms, e2b-protocol.md §3.4 rule 4). Spawn failures are InvalidArgument (as
  // E2B's envd reports them).
  Result<std::shared_ptr<ManagedProcess>> Start(
      SpawnPlan plan, const std::shared_ptr<StreamSession>& session,
      std::optional<std::chrono::milliseconds> lifetime = std::nullopt);

  // A live process, or an ended one still remembered. NotFound ("process with pid N not
  // found") otherwise.
  // `include_ended` also finds ended processes still remembered (Connect); signals and input
  // only reach live ones.
  Result<std::shared_ptr<ManagedProcess>> Find(const ProcessSelector& selector,
                                               bool include_ended = false) const;
  // Live processes only, by pid.
  std::vector<ProcessInfo> List() const;
  // SIGKILLs every live process group and forgets all (sandbox recycling).
  void KillAll();
  size_t live_count() const;

 private:
  // The tables, shared with the callbacks that outlive a call (pump end, retention timer)
  // through weak_ptrs: a callback firing after the manager died finds nothing to lock.
  struct Table {
    mutable std::mutex mu;
    std::condition_variable drained;                            // live became empty
    std::map<uint32_t, std::shared_ptr<ManagedProcess>> live;   // guarded by mu
    std::map<uint32_t, std::shared_ptr<ManagedProcess>> ended;  // guarded by mu
  };

  // Moves `p` from live to ended and schedules its removal after `retention`.
  static void OnEnded(const std::shared_ptr<Table>& table, TimerQueue& timers,
                      std::chrono::milliseconds retention,
                      const std::shared_ptr<ManagedProcess>& p);

  // Output pump threads still running. Shared with each (detached) pump thread, so a pump that
  // outlives the destructor's bounded wait still finds its counter.
  struct PumpCount {
    std::mutex mu;
    std::condition_variable done;
    int running = 0;  // guarded by mu
  };

  TimerQueue& timers_;
  const std::chrono::milliseconds ended_retention_;
  AuditLog* audit_ = nullptr;
  const std::shared_ptr<PumpCount> pumps_ = std::make_shared<PumpCount>();
  const std::shared_ptr<Table> table_ = std::make_shared<Table>();
};

}  // namespace warren::envd
