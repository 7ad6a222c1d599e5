#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "api/object.h"
#include "api/sandbox_secrets.h"
#include "base/result.h"
#include "gateway/route.h"
#include "gateway/route_table.h"
#include "store/store.h"

namespace warren::gateway {

// Warren's own annotation: "true" on a Sandbox makes traffic resume it when paused (E2B's
// autoResume). Set by the E2B layer at create.
inline constexpr const char* kAutoResumeAnnotation = "warren.dev/auto-resume";
// E2B maskRequestHost: the Host header the sandbox's ports get instead of the client's.
inline constexpr const char* kMaskRequestHostAnnotation = "warren.dev/mask-request-host";

// The sandbox id of a Sandbox object: label agents.kruise.io/sandbox-id, else the annotation of
// the same name; empty when it has neither.
std::string SandboxIdOf(const api::Object& sandbox);

// The route a Sandbox object stands for. State: being deleted → gone; spec.paused → paused (the
// pause is under way: stop routing now); status.phase Running → running, Paused or Resuming →
// paused; anything else (Pending, Failed, Succeeded, Recycling, Upgrading, Terminating) → gone.
// An unclaimed warm-pool member is closed: nobody outside the control plane has any business in
// it before a claim hands it out (what anyone could start there, a claimant would get).
// The token is the object's sealed one; one that does not open becomes a random token nobody
// holds (the sandbox is then closed, never open). InvalidArgument when the object has no
// sandbox id.
Result<Route> RouteFromSandbox(const api::Object& sandbox, const api::SandboxSecrets& secrets);

// Applies one watch event of a Sandbox to the table: ADDED/MODIFIED upsert the object's route,
// DELETED removes it (fenced at the deletion's revision, for that uid only). Returns whether
// the table changed. RouteSync calls it for every event; exposed so a late (replayed) event can
// be shown not to undo a removal.
bool ApplySandboxEvent(RouteTable& routes, const store::WatchEvent& event,
                       const api::SandboxSecrets& secrets);

struct RouteSyncOptions {
  // Backoff between attempts to list and watch again after the watch ended (store restart,
  // history compacted past the watch).
  std::chrono::milliseconds retry_min{100};
  std::chrono::milliseconds retry_max{5000};
};

struct RouteSyncStats {
  uint64_t events = 0;   // watch events seen
  uint64_t applied = 0;  // that changed the table
  uint64_t ignored = 0;  // stale, fenced, or without a sandbox id
  uint64_t resyncs = 0;  // full lists after the first
  int64_t revision = 0;  // the last revision seen
};

// Keeps a RouteTable in step with the Sandbox objects of a store, the routes' source of
// truth: a full list first (Start returns once it is in the table, so the gateway never serves
// from an empty table), then a watch from the list's revision. When the watch ends by itself it
// lists and watches again, with backoff, removing routes whose objects vanished meanwhile.
//
// Thread-safe. Owns its watch subscription and one thread; borrows the store, the secrets and
// the table, which must outlive it. Events are applied on the store's watch thread (table updates
// never block).
class RouteSync {
 public:
  static Result<std::unique_ptr<RouteSync>> Start(store::Store& store,
                                                  const api::SandboxSecrets& secrets,
                                                  RouteTable& routes,
                                                  RouteSyncOptions options = {});
  ~RouteSync();
  RouteSync(const RouteSync&) = delete;
  RouteSync& operator=(const RouteSync&) = delete;

  // Cancels the watch and joins the thread. Idempotent.
  void Stop();
  RouteSyncStats Stats() const;

 private:
  RouteSync(store::Store& store, const api::SandboxSecrets& secrets, RouteTable& routes,
            RouteSyncOptions options);
  // Lists, fills the table, removes what vanished, and subscribes from the list's revision.
  Status ListAndWatch();
  void OnEvent(const store::WatchEvent& event);
  void OnClose(const Status& status, uint64_t epoch);
  void Run();

  store::Store& store_;
  const api::SandboxSecrets& secrets_;
  RouteTable& routes_;
  const RouteSyncOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::unique_ptr<store::Subscription> subscription_;  // guarded by mu_
  uint64_t epoch_ = 0;                                 // guarded by mu_; one per subscription
  bool need_resync_ = false;                           // guarded by mu_
  bool stopping_ = false;                              // guarded by mu_
  RouteSyncStats stats_;                               // guarded by mu_
  std::thread thread_;
};

}  // namespace warren::gateway
