#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::gateway {

// envd's port inside every sandbox: the default when a request names no port.
inline constexpr uint16_t kEnvdPort = 49983;

// Which sandbox and port a request is for.
struct SandboxAddress {
  std::string sandbox_id;
  uint16_t port = kEnvdPort;
  bool from_host = false;  // routed by Host rather than by the E2B headers
};

// The request fields routing looks at (absent fields are nullopt).
struct RoutingFields {
  std::optional<std::string_view> sandbox_id_header;    // E2b-Sandbox-Id
  std::optional<std::string_view> sandbox_port_header;  // E2b-Sandbox-Port
  std::optional<std::string_view> host;                 // Host
};

// Decides where a request goes, as E2B's proxy does: the E2b-Sandbox-Id header first (with
// E2b-Sandbox-Port, default 49983), else a Host of the form `<port>-<sandboxId>.<domain>`
// (any domain when `domain` is empty; case-insensitive; a trailing `:port` is ignored).
// InvalidArgument naming the field and what is wrong with it: a malformed id or port, a Host
// that is not of that form, or neither header nor Host. Input is untrusted: values are quoted
// back only truncated. Pure function; thread-safe.
Result<SandboxAddress> ParseSandboxAddress(const RoutingFields& fields, std::string_view domain);

// Sandbox ids the gateway accepts: 1-128 characters of [A-Za-z0-9_-] (E2B ids, OpenKruise's
// "<ns>--<name>" ids, and the SDK's "debug_sandbox_id").
bool IsRoutableSandboxId(std::string_view id);

}  // namespace warren::gateway
