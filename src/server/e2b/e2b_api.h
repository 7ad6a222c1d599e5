#pragma once

#include <memory>

#include "audit/journal.h"
#include "net/router.h"
#include "server/auth/key_store.h"
#include "server/e2b/sandbox_service.h"

namespace warren::server::e2b {

// The E2B-compatible control-plane REST API (e2b-protocol.md §2) on the server's router:
//   GET    /health                                   200, no key needed
//   POST   /sandboxes, /v2/sandboxes                 201 Sandbox
//   GET    /sandboxes (v1: running), /v2/sandboxes   200 [ListedSandbox] (+ X-Next-Token)
//   GET    /sandboxes/{id}                           200 SandboxDetail
//   DELETE /sandboxes/{id}                           204 | 404
//   POST   /sandboxes/{id}/timeout                   204
//   POST   /sandboxes/{id}/refreshes                 204
//   POST   /sandboxes/{id}/pause                     204 | 409 | 404
//   POST   /sandboxes/{id}/resume                    201 Sandbox | 409 (deprecated by E2B)
//   POST   /sandboxes/{id}/connect, /v2/...          200 running | 201 resumed
//   GET    /sandboxes/{id}/metrics                   200 [SandboxMetric]
//   GET    /templates                                200 [Template]
//   GET    /api-keys, POST /api-keys, DELETE /api-keys/{id}   key management (api_keys_api.h)
// Every route but /health needs X-API-Key (401 otherwise; the server's route guard checks it).
// Errors are {"code","message"}. Handlers run on the blocking pool. Thread-safe; shares
// ownership of the service with the router's handlers.
// Calls that change a sandbox are recorded in `journal` (null: nowhere; audited.h).
void RegisterE2bRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                       std::shared_ptr<audit::Journal> journal = nullptr);

}  // namespace warren::server::e2b
