#pragma once

#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "net/router.h"
#include "server/auth/key_store.h"

namespace warren::server::auth {

// Which routes of a router need no key, and which need an admin key.
struct RouteGuardOptions {
  // Health checks: they say nothing about what the server holds, and probes carry no key. The
  // dashboard's static files (server/ui): the page holds no data and asks for the key itself.
  // Exact patterns only, so no route added later under a public prefix is public by accident.
  // E2B's volume content routes carry no API key but the volume's own token, which their
  // handler checks (server/e2b/volumes_api.h).
  std::set<std::string, std::less<>> public_patterns = {"/health",
                                                        "/healthz",
                                                        "/readyz",
                                                        "/ui",
                                                        "/ui/{file...}",
                                                        "/volumecontent/{volumeID}/dir",
                                                        "/volumecontent/{volumeID}/path",
                                                        "/volumecontent/{volumeID}/file"};
  // Patterns only an admin key may call (exact patterns, or a prefix ending in '*').
  std::set<std::string, std::less<>> admin_patterns = {"/metrics"};
};

// The key a request presents: X-API-Key (what the E2B SDKs send), else
// `Authorization: Bearer <key>` (what the CLI and Kubernetes-style clients send). Empty when
// neither is there.
std::string_view PresentedKey(const net::Headers& headers);

// Puts an API-key check in front of every route of `router` (net::Router::WrapAll) but the
// public ones, so a route added anywhere, by any module, is covered without knowing about it.
// A request without a valid key is answered 401 before its handler runs: a Kubernetes `Status`
// for the resource API (/apis/...), E2B's {"code":401,"message":...} elsewhere, with
// `WWW-Authenticate: Bearer`. An admin-only route answers a team key 403. Otherwise the
// handler runs with net::Request::principal set. Blocking routes share the server's blocking
// threads by team (net::RouteOptions::fairness_key), so one team's flood slows that team. Call once
// the router is complete, before the server starts; `keys` is shared with the handlers for the
// router's life.
void GuardRoutes(net::Router& router, std::shared_ptr<KeyStore> keys,
                 const RouteGuardOptions& options = {});

// The principal the guard put on `req`. CHECK-fails on a route the guard did not cover: a
// handler that needs a caller is never public.
const Principal& CallerOf(const net::Request& req);

}  // namespace warren::server::auth
