#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/object.h"
#include "api/sandbox_secrets.h"
#include "base/clock.h"
#include "base/result.h"
#include "controller/claim/claimer.h"
#include "controller/quota_gate.h"
#include "server/auth/key_store.h"
#include "server/e2b/e2b_options.h"
#include "server/e2b/list_page.h"
#include "server/e2b/node_access.h"
#include "server/e2b/requests.h"
#include "server/e2b/route_notifier.h"
#include "server/e2b/sandbox_locator.h"
#include "server/e2b/sandbox_record.h"
#include "store/store.h"

namespace warren::server::e2b {

struct ResolvedTemplate;

// The E2B lifecycle on Sandbox objects (e2b-protocol.md §2, openkruise-agents.md §3.8): a
// create makes a Sandbox from a template and returns once it is Running, Ready and envd has its
// token; timeouts become spec.shutdownTime / spec.pauseTime (the timers controller acts on
// them); pause sets spec.paused and waits for Paused; connect resumes (or extends the timer);
// kill deletes the object and tells the gateway at once. Every call is scoped to the caller:
// a key sees its team's namespace (an admin every namespace), and anything else is NotFound.
//
// envd's token and the /init body are sealed on the object (api/sandbox_secrets.h); the token is
// returned by create and connect only, never by get or list.
//
// HTTP-free; the handlers in e2b_api.cc translate. Thread-safe: calls block (store writes,
// waits on the store watch, envd /init) and run on the server's blocking pool. Borrows the
// store, secrets, node access, route notifier and clock, which must outlive it. `node` may be null
// (no node agent in this process: sandboxes never become Ready), `routes` too.
class SandboxService {
 public:
  SandboxService(store::Store& store, const api::SandboxSecrets& secrets, NodeAccess* node,
                 RouteNotifier* routes, base::Clock& clock, E2bOptions options);
  ~SandboxService();

  const E2bOptions& options() const { return options_; }
  store::Store& store() { return store_; }
  // Creates from a SandboxSet's warm pool claim through it (null: cold creates only).
  void SetClaimer(controller::claim::Claimer* claimer) { claimer_ = claimer; }
  // Cold creates reserve their sandbox against the team's quota here (null: none).
  void SetQuota(controller::QuotaGate* quota) { quota_ = quota; }

  // `abandoned` (optional) says the client went away: a cold create waiting for its sandbox
  // then stops waiting and deletes it, so the thread and the sandbox are freed at once.
  Result<SandboxRecord> Create(const auth::Principal& who, const CreateRequest& request,
                               const std::function<bool()>& abandoned = nullptr);
  // A cold create from a template already resolved (a fork's: the source's pod template and
  // the Checkpoint to start from).
  Result<SandboxRecord> CreateFrom(const auth::Principal& who, const CreateRequest& request,
                                   const ResolvedTemplate& tpl,
                                   const std::function<bool()>& abandoned = nullptr);
  // The caller's live sandbox object with that id (NotFound as Get).
  Result<api::Object> Lookup(const auth::Principal& who, std::string_view sandbox_id) {
    return Find(who, sandbox_id, false);
  }
  // The namespace of a sandbox a create just answered with, as that create recorded it (no read
  // of the object: the audit journal of every create asks); nullopt when nothing is recorded.
  std::optional<std::string> NamespaceOfCreated(std::string_view sandbox_id) const {
    auto where = locator_.Hint(sandbox_id);
    if (!where) return std::nullopt;
    return std::move(where->first);
  }
  // The env vars the sandbox's envd was initialised with (the sealed /init body).
  Result<std::map<std::string, std::string>> EnvVarsOf(const api::Object& sandbox) const;
  Result<SandboxRecord> Get(const auth::Principal& who, std::string_view sandbox_id);
  Result<ListPage> List(const auth::Principal& who, const ListQuery& query);
  // NotFound when there is no such sandbox (or it is being deleted already).
  Status Kill(const auth::Principal& who, std::string_view sandbox_id);
  // FailedPrecondition (409) when already paused or not running. `keep_memory` false: the
  // processes end and the files stay (spec.pauseStrategy Stop); connect boots it again.
  Status Pause(const auth::Principal& who, std::string_view sandbox_id, bool keep_memory = true);

  struct ConnectResult {
    SandboxRecord record;
    bool resumed = false;  // 201 rather than 200
  };
  // Running: the timer is only ever extended. Paused: resumed, timer set to now + timeout.
  // `keep_memory` false: a paused sandbox boots again on its files instead (see ConnectRequest).
  Result<ConnectResult> Connect(const auth::Principal& who, std::string_view sandbox_id,
                                int64_t timeout_seconds, bool keep_memory = true);
  // The deprecated POST /sandboxes/{id}/resume: like Connect, but 409 when running.
  Result<SandboxRecord> Resume(const auth::Principal& who, std::string_view sandbox_id,
                               int64_t timeout_seconds);
  // Sets the end to now + seconds (may shorten; 0 ends it now).
  Status SetTimeout(const auth::Principal& who, std::string_view sandbox_id, int64_t seconds);
  // PUT /sandboxes/{id}/network: replaces the sandbox's egress policy, in force on return.
  Status SetNetwork(const auth::Principal& who, std::string_view sandbox_id,
                    const sbnet::EgressPolicy& policy);
  // Extends the end to now + seconds if that is later.
  Status Refresh(const auth::Principal& who, std::string_view sandbox_id, int64_t seconds);
  Result<std::vector<UsageSample>> Metrics(const auth::Principal& who, std::string_view sandbox_id,
                                           const MetricsQuery& query);

  // For the gateway's auto-resume: resumes the sandbox (any owner) for traffic. One that an
  // idle pause stopped keeps its timers as they were.
  Status ResumeForTraffic(std::string_view namespace_, std::string_view name);
  // For the gateway's idle pause (spec.pauseStrategy.idleSeconds): pauses the running sandbox
  // `uid` the way its pauseStrategy says, marks it for traffic to wake it, and keeps its
  // shutdown timer. Does not wait for the node. FailedPrecondition when it is not running.
  Status PauseIdle(std::string_view namespace_, std::string_view name, std::string_view uid);

 private:
  // Each of the create's volumeMounts names a Volume of the team that is not being deleted
  // (InvalidArgument naming it otherwise).
  Status CheckVolumes(const std::string& ns, const CreateRequest& request);
  // The caller's sandbox with that id. `include_dead`: also failed/finished ones (kill).
  Result<api::Object> Find(const auth::Principal& who, std::string_view sandbox_id,
                           bool include_dead);
  // Get → mutate → Update with the read revision, again on a write conflict.
  Result<api::Object> Modify(const api::Object& current,
                             const std::function<Status(api::Object&)>& mutate);
  // Waits until Running and Ready; a failed sandbox is an error with the node's message.
  Result<api::Object> WaitReady(const api::Object& sandbox, std::chrono::milliseconds timeout,
                                const std::function<bool()>& abandoned = nullptr);
  // Sends the stored /init body to envd (after create or resume).
  Status InitEnvd(const api::Object& sandbox);
  Result<ConnectResult> ResumeObject(const api::Object& sandbox, int64_t timeout_seconds,
                                     bool keep_memory = true, bool reset_timer = true);
  // The record of a create or connect answer: with envd's token, unsealed.
  Result<SandboxRecord> RecordWithToken(const api::Object& sandbox) const;
  // A create from a snapshot: NotFound when its Checkpoint is gone or going,
  // FailedPrecondition while it is not Succeeded.
  Status CheckRestorable(const std::string& namespace_, const std::string& checkpoint);
  // Deletes a sandbox a create gave up on, logging rather than failing.
  void Discard(const api::Object& sandbox, std::string_view step, const Status& why);
  base::WallTime EndFromNow(int64_t seconds) const;
  // A create whose template is a SandboxSet in the caller's namespace: a claim from its pool
  // (the claimer does envd /init and the route), cold only when the pool is empty.
  Result<SandboxRecord> CreateFromPool(const auth::Principal& who, const CreateRequest& request,
                                       const ResolvedTemplate& tpl);

  store::Store& store_;
  const api::SandboxSecrets& secrets_;
  NodeAccess* const node_;
  RouteNotifier* const routes_;
  base::Clock& clock_;
  const E2bOptions options_;
  controller::claim::Claimer* claimer_ = nullptr;  // set before serving
  controller::QuotaGate* quota_ = nullptr;         // set before serving
  SandboxLocator locator_;
};

}  // namespace warren::server::e2b
