#pragma once

#include <functional>
#include <string_view>

#include "net/router.h"
#include "server/auth/key_store.h"

namespace warren::server::e2b {

// A handler that runs for an authenticated caller; returns the response to send.
using AuthedHandler =
    std::function<net::Response(const auth::Principal& who, const net::Request& req)>;

// Adds a blocking E2B route. The server's route guard (auth/route_guard.h) has checked the
// caller's X-API-Key before it runs (a missing, malformed or unknown key is answered 401
// {"code":401,"message":...} without calling `handler`). Bodies above `max_body_bytes` are
// refused with 413 before that. Every answer is counted and timed under `operation`
// (e2b_metrics.h).
void AddAuthedRoute(net::Router& router, std::string_view method, std::string_view pattern,
                    std::string_view operation, size_t max_body_bytes, AuthedHandler handler);

}  // namespace warren::server::e2b
