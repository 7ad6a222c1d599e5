#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include "api/object.h"
#include "base/clock.h"
#include "base/principal.h"
#include "base/result.h"
#include "net/router.h"
#include "obs/event_recorder.h"
#include "server/server.h"
#include "store/store.h"

namespace warren::server {

// Kubernetes' Eviction subresource for Sandboxes, judged against PodUnavailableBudgets
// (controller/disruption_budget.h):
//   POST /apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/eviction
//   POST /api/v1/namespaces/{ns}/sandboxes/{name}/eviction            (the same, shorter)
// with a policy/v1 Eviction body ({"apiVersion":"policy/v1","kind":"Eviction",
// "metadata":{"name":...},"deleteOptions":{"preconditions":{...},"dryRun":["All"]}}; an empty
// body is taken as one) or ?dryRun=All.
//   - 201 Status Success: every budget of the namespace selecting the sandbox allowed it; each
//     that counted it recorded it in status.disruptedPods (and its group in
//     unavailablePodGroups) with a write over the revision judged, then the sandbox was deleted.
//     Two evictions racing for a budget's last slot: one write wins, the other judges again and
//     is refused.
//   - 429 TooManyRequests: a budget refused. The message names the budget and why ("Cannot evict
//     sandbox as it would violate the sandbox's disruption budget team-a/pub-x: group g1 of 3
//     would be unavailable, 1 group(s) already unavailable (g2: ...), maxUnavailable 1"), and
//     details.causes carries it with reason DisruptionBudget, as Kubernetes does. Events
//     (deduplicated: again only when the reason changes, or a minute later): Warning
//     `PubPreventPodDeletion` on the budget (Kruise's reason), and, when the sandbox's node is
//     cordoned (a drain is under way), Warning `DrainWaiting` on the Node naming the sandbox and
//     the budget.
//   - 404 for a sandbox that is not there or not the caller's (a team key reaches its own
//     namespace only, auth/tenant_policy.h); 409 when the budgets kept changing under it.
// An eviction of a sandbox on a cordoned node that goes through is told on the Node too
// (Normal `DrainEvicted`). Thread-safe; borrows the store and clock.
class EvictionApi {
 public:
  EvictionApi(store::Store& store, base::Clock& clock = base::RealClock());

  void Register(net::Router& router);

  struct Outcome {
    int code = 201;
    std::string reason;   // Kubernetes' reason: "", TooManyRequests, NotFound, ...
    std::string message;  // what was decided, or why not
  };
  struct Request {
    std::string namespace_;
    std::string name;
    bool dry_run = false;
    store::Preconditions preconditions;
  };
  // The whole decision, for the route and for tests.
  Outcome Evict(const base::Principal& who, const Request& request);

 private:
  void Handle(net::Request&& req, net::Responder responder);
  // Writes `sandbox_key` out of the disruptedPods of the budget `budget_key` (after an eviction
  // that was recorded there did not happen).
  void Unrecord(const std::string& ns, const std::string& budget, const std::string& sandbox);
  // Records an Event unless the same one (object, reason, sandbox, message) went out within the
  // last minute.
  void Tell(const api::Object& involved, obs::EventType type, std::string_view reason,
            const std::string& sandbox_key, const std::string& message);
  void TellNode(const api::Object& sandbox, obs::EventType type, std::string_view reason,
                const std::string& message);

  store::Store& store_;
  base::Clock& clock_;
  obs::EventRecorder events_;
  std::mutex mu_;
  // (object uid, reason, sandbox) → (message, when told); guarded by mu_.
  std::map<std::tuple<std::string, std::string, std::string>,
           std::pair<std::string, base::WallTime>>
      told_;
};

// Adds the eviction routes to `server`, before it starts (every replica serves them).
void InstallEvictions(Server& server);
// The PodUnavailableBudget controller (controller/pub_controller.h) as a server component: a
// one-writer part, for the leader (server/leader_only.h). Its writes are conditional on what it
// read, so two running at once (a term changing hands) lose nothing, only repeat work.
std::unique_ptr<Component> MakeBudgetController(store::Store& store);
// Both, for a server that runs every part itself (tests).
void InstallDisruption(Server& server);

}  // namespace warren::server
