#pragma once

#include <string_view>

namespace warren::envd {

// The envd protocol version this agent implements. The E2B SDKs switch features on by it
// (e2b-protocol.md §3.9), so it must never claim more than is implemented: 0.6.4 turns on
// closeStdin (0.5.2), octet-stream and gzip uploads (0.5.7), file metadata (0.6.2), watchDir
// includeEntry (0.6.3) and allowNetworkMounts (0.6.4), and stops the SDK from sending the user
// explicitly (>= 0.4.0). The control plane reports it as `envdVersion` in create/connect
// responses; envd serves it as the `X-Envd-Version` header of GET /health and in GET /metrics.
inline constexpr std::string_view kEnvdVersion = "0.6.4";

// The TCP port every E2B SDK dials inside a sandbox (hard-coded in the SDKs).
inline constexpr int kEnvdPort = 49983;

}  // namespace warren::envd
