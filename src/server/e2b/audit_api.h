#pragma once

#include <memory>

#include "audit/journal.h"
#include "net/router.h"
#include "server/e2b/sandbox_service.h"

namespace warren::server::e2b {

// Reading a sandbox's audit journal (audit/journal.h):
//   GET /sandboxes/{id}/audit[?limit=N]          by E2B id, also after the sandbox is gone
//   GET /apis/agents.kruise.io/v1alpha1/namespaces/{ns}/sandboxes/{name}/audit[?limit=N]
// 200 {"items": [entry, ...]} oldest first (the newest N, default and at most 1000). A team key
// reads its own namespace's journals only (another team's sandbox is 404, as everywhere); an
// admin any. The first route answers E2B's {"code","message"} errors, the second Kubernetes
// Status objects. Shares ownership of the journal and service with the router's handlers.
void RegisterAuditRoutes(net::Router& router, std::shared_ptr<SandboxService> service,
                         std::shared_ptr<audit::Journal> journal);

}  // namespace warren::server::e2b
