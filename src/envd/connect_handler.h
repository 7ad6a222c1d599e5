#pragma once

// Serving Connect RPCs (JSON codec) on the net/ router: the request steps every method shares —
// access token, content type, Basic-auth user, envelope and deadline headers — and the shapes of
// the answers, so a service only writes its methods.

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "envd/envd_state.h"
#include "envd/stream_session.h"
#include "net/http.h"
#include "net/router.h"
#include "os/user_db.h"

namespace warren::envd {

// What every RPC consults to let a caller in and know who it acts as. Borrowed; both outlive
// the router.
struct RpcAuth {
  const EnvdState* state;
  const os::UserDb* users;
};

// A unary method: the JSON request body and the caller's user → the JSON response body.
using UnaryMethod =
    std::function<Result<std::string>(const std::string& body, const os::UserInfo& user)>;
// A server-streaming method: the request message (unwrapped from its envelope) and an open
// stream, which the method owns from then on and must end (StreamSession does it exactly once).
using StreamMethod =
    std::function<void(const std::string& payload, const os::UserInfo& user,
                       const std::shared_ptr<MessageSink>& sink, StreamOptions options)>;

// Registers POST `path` as a unary method: 401 without the token, 415 for a non-JSON codec,
// Connect JSON errors (status from the code table) for everything else that fails.
void AddUnaryMethod(net::Router& router, std::string_view path, RpcAuth auth, UnaryMethod method);
// Registers POST `path` as a server-streaming method: after the 200 head every failure goes into
// the end-of-stream frame, as the Connect protocol demands.
void AddStreamMethod(net::Router& router, std::string_view path, RpcAuth auth, StreamMethod method);

// {"code":<status>,"message":...} — E2B's plain-HTTP error body.
net::Response HttpError(int status, std::string_view message);
// {"code":"not_found","message":...} with the status of the Connect code table.
net::Response ConnectError(const Status& status);
// Ok when no token is configured or X-Access-Token matches it.
Status CheckRequestToken(const EnvdState& state, const net::Request& request);
// Whether the request carries this sandbox's node secret (X-Warren-Node-Secret): the node
// agent's own call (probes), let in whatever the access token and not journalled.
bool IsNodeCall(const EnvdState& state, const net::Request& request);

}  // namespace warren::envd
