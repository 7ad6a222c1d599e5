#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "net/http.h"

namespace warren::gateway {

// The gateway's own answers, byte for byte what E2B's proxy and envd send (the SDKs and E2B's
// tests compare whole bodies, so the field order matters). All application/json.

// 502 {"sandboxId":"<id>","message":"The sandbox was not found","code":502}: unknown, killed,
// or paused without auto-resume. isRunning() is false exactly on this.
net::Response SandboxNotFound(std::string_view sandbox_id);

// 502 {"sandboxId":"<id>","message":"The sandbox is running but port is not open","port":N,
// "code":502}.
net::Response PortNotOpen(std::string_view sandbox_id, uint16_t port);

// 401 {"code":401,"message":"unauthorized access, please provide a valid access token or method
// signing if supported"} (envd's wording, so the SDK raises AuthenticationError).
net::Response Unauthorized();

// What envd itself answers a request the gateway refused (Gateway::Authorized): for /files
// without X-Access-Token, 401 "missing signature query parameter" (a file URL that was not
// signed); otherwise Unauthorized().
net::Response UnauthorizedFor(const net::Request& request, uint16_t port);

// {"code":N,"message":"..."} for the gateway's other errors (400 with what is missing).
net::Response JsonError(int status, std::string_view message);

}  // namespace warren::gateway
