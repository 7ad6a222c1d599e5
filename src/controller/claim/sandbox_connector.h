#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_fd.h"
#include "net/http.h"

namespace warren::controller::claim {

// How the control plane reaches a sandbox's envd: implemented by the node agent (a socket made
// inside the sandbox's network namespace; contracts.md). Thread-safe.
class SandboxConnector {
 public:
  virtual ~SandboxConnector() = default;
  // A connected socket to 127.0.0.1:port inside the sandbox with this E2B id.
  virtual Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                      std::chrono::milliseconds timeout) = 0;
  // Headers that authorise the control plane to envd (its node secret), sent with /init and
  // /reset so a token a previous user set cannot lock the control plane out. May be empty.
  virtual net::Headers EnvdAuthHeaders(std::string_view sandbox_id) {
    (void)sandbox_id;
    return {};
  }
  // POST /init and /reset to the sandbox's envd. The defaults open a connection per call through
  // Dial; an implementation with a keep-alive client per sandbox (the node agent's) saves the
  // connect on the claim path.
  virtual Status Init(std::string_view sandbox_id, const std::string& body,
                      std::chrono::milliseconds timeout, std::string_view current_token);
  virtual Status Reset(std::string_view sandbox_id, std::chrono::milliseconds timeout);
  // Whether envd holds exactly `token` (it accepts it and refuses another): how the janitor
  // tells a claim that reached /init from one that did not. Errors: envd unreachable.
  virtual Result<bool> HoldsToken(std::string_view sandbox_id, std::string_view token,
                                  std::chrono::milliseconds timeout);
};

inline constexpr uint16_t kEnvdPort = 49983;

// POST /init through `connector` (its Init): the sandbox's envd gets `body` (JSON: envVars,
// accessToken, defaultUser, defaultWorkdir). `current_token` is the token envd holds now, if any (a
// recycled pool member holds a secret pool token): sent as X-Access-Token besides the connector's
// headers. Errors: Unavailable (cannot connect, or envd answered other than 204, with its status
// and message), DeadlineExceeded.
Status EnvdInit(SandboxConnector& connector, std::string_view sandbox_id, const std::string& body,
                std::chrono::milliseconds timeout, std::string_view current_token = {});

// POST /reset: envd kills the processes started through its API and forgets token, env vars
// and defaults set by /init. Same errors.
Status EnvdReset(SandboxConnector& connector, std::string_view sandbox_id,
                 std::chrono::milliseconds timeout);

}  // namespace warren::controller::claim
