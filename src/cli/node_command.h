#pragma once

#include "cli/app.h"

namespace warren::cli {

// `warren node --store etcd://… --key-dir DIR [--name N] [--data-dir D] [--address A]
//               [--port P] [--advertise HOST:PORT] [--port-file F] [--sandbox-network …]`:
// the node agent as its own process (node/node_process.h), until SIGINT or SIGTERM.
void AddNodeCommand(App& app);

}  // namespace warren::cli
