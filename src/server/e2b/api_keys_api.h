#pragma once

#include <memory>

#include "net/router.h"
#include "server/auth/key_store.h"

namespace warren::server::e2b {

// API key management, shaped like OpenKruise's E2B extension (`warren apikey` uses it):
//   GET    /api-keys        200 [{id,name,team,admin,mask,createdAt}]: every key for an admin,
//                           the caller's team's keys otherwise
//   POST   /api-keys        {name?, team?, admin?} → 201 {...,"key":"e2b_..."} (shown once). A
//                           non-admin key may only create non-admin keys for its own team (403).
//   DELETE /api-keys/{id}   id or name → 204; 404 unknown (or another team's, for a non-admin);
//                           403 for a non-admin removing an admin key; 409 for the last admin key
// Thread-safe; shares ownership of the key store with the router's handlers.
void RegisterApiKeyRoutes(net::Router& router, std::shared_ptr<auth::KeyStore> keys);

}  // namespace warren::server::e2b
