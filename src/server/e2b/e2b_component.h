#pragma once

#include <memory>
#include <string>

#include "audit/journal.h"
#include "base/clock.h"
#include "base/result.h"
#include "server/auth/key_store.h"
#include "server/component.h"
#include "server/e2b/e2b_options.h"
#include "server/e2b/node_access.h"
#include "server/e2b/route_notifier.h"
#include "server/e2b/sandbox_service.h"
#include "server/e2b/team_metrics.h"
#include "server/server.h"

namespace warren::server::e2b {

struct E2bParts {
  NodeAccess* node = nullptr;       // the node agent (null: no sandboxes become ready)
  RouteNotifier* routes = nullptr;  // the gateway (null: it learns from its store watch only)
  // Warm pools (controller::PoolManager): creates from a SandboxSet claim through it.
  controller::claim::Claimer* claimer = nullptr;
  base::Clock* clock = nullptr;  // null = the real clock
  // Lifecycle calls are recorded there and read back (GET /sandboxes/{id}/audit); null: not.
  std::shared_ptr<audit::Journal> audit;
  E2bOptions options;
};

// The E2B API as a part of `warren server`: Install registers the routes
// (e2b_api.h, api_keys_api.h) and adds this component, whose Start makes sure the built-in
// `base` template exists. Owned by the server; the service and key store are shared with the
// router's handlers. Thread-safe after Start.
//
// envd's /init is sent by the create and connect calls; after a restart of envd (sandbox
// restart, host reboot) the node agent replays the stored body itself before it reports the
// sandbox Ready, so nothing here has to watch for that.
class E2bComponent : public Component {
 public:
  // Call before server.Start(). Returns the component (owned by the server) so other parts
  // can reach the service (the gateway's auto-resume).
  static Result<E2bComponent*> Install(Server& server, E2bParts parts);

  std::string_view name() const override { return "e2b"; }
  Status Start() override;
  void Stop() override;

  SandboxService& service() { return *service_; }
  auth::KeyStore& keys() { return *keys_; }

 private:
  E2bComponent(store::Store& store, const api::SandboxSecrets& secrets,
               std::shared_ptr<SandboxService> service, std::shared_ptr<auth::KeyStore> keys,
               std::shared_ptr<TeamMetrics> team_metrics);

  store::Store& store_;
  const api::SandboxSecrets& secrets_;
  std::shared_ptr<SandboxService> service_;
  std::shared_ptr<auth::KeyStore> keys_;
  std::shared_ptr<TeamMetrics> team_metrics_;
};

}  // namespace warren::server::e2b
