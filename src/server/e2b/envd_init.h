#pragma once

#include <chrono>
#include <map>
#include <string>
#include <string_view>

#include "base/status.h"
#include "server/e2b/node_access.h"

namespace warren::server::e2b {

// The body of envd's POST /init (src/envd/README.md): env vars every later process gets, the
// access token the SDK must present, and the default user. Kept on the Sandbox, sealed
// (api/sandbox_secrets.h), and replayed after a resume or a restart.
std::string MakeInitBody(const std::map<std::string, std::string>& env_vars,
                         std::string_view access_token, std::string_view default_user);

// Sends `body` to envd's /init inside the sandbox through `node`, presenting `access_token`
// (envd requires it once a token is set; a fresh envd has none and ignores it). Retries
// connection failures until `timeout`. Errors name the sandbox and envd's answer. Blocks.
Status SendInit(NodeAccess& node, std::string_view sandbox_id, std::string_view body,
                std::string_view access_token, std::chrono::milliseconds timeout);

}  // namespace warren::server::e2b
