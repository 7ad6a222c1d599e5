#pragma once

#include <functional>

#include "base/status.h"
#include "cli/app.h"
#include "server/server.h"

namespace warren::cli {

// What other modules add to `warren server` (routes, controllers, the node agent, the E2B API,
// the gateway): called after the store is open and before serving starts.
using ServerParts = std::function<Status(server::Server& server)>;

// `warren server [--address A] [--port P] [--data-dir D] [--store-sync normal|full]
//                [--log-level L] [--port-file F] [--allowed-registries LIST]`: runs until
// SIGINT or SIGTERM.
void AddServerCommand(App& app, ServerParts parts);

}  // namespace warren::cli
