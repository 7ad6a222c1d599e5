#pragma once

#include <memory>

#include "net/router.h"
#include "server/auth/key_store.h"
#include "server/e2b/node_access.h"
#include "server/e2b/sandbox_service.h"
#include "server/e2b/team_metrics.h"

namespace warren::server::e2b {

// E2B's read-only routes beyond a sandbox's own info (the contract of the SDK's generated
// schema; e2b-protocol.md §2.8–2.9):
//   GET /sandboxes/{id}/logs?start=&limit=             200 {logs:[{line,timestamp}],logEntries}
//   GET /v2/sandboxes/{id}/logs?cursor=&limit=&direction=&level=&search=   200 {logs:[entry]}
//   GET /sandboxes/metrics?sandbox_ids=a,b             200 {sandboxes:{id: SandboxMetric}}
//   GET /teams                                         200 [Team] (the caller's; admin: all)
//   GET /teams/{teamID}/metrics?start=&end=            200 [TeamMetric]; 403 another team's
//   GET /teams/{teamID}/metrics/max?metric=&start=&end=  200 {timestampUnix, value, ...}
// Log lines are the template command's output (stdout is level info, stderr error), with the
// time each line arrived; cursors are unix milliseconds. A team is a namespace (teamID = its
// name). Borrows nothing: shares ownership of what it is given with the router's handlers.
void RegisterObserveRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                           NodeAccess* node, std::shared_ptr<TeamMetrics> team_metrics,
                           std::shared_ptr<auth::KeyStore> keys);

}  // namespace warren::server::e2b
