#pragma once

#include <cstdint>
#include <string_view>

#include "api/object.h"

namespace warren::server::e2b {

// Tells the sandbox gateway about a lifecycle change the moment the E2B layer made it, instead
// of leaving it to the gateway's store watch: the first request after a create or resume must
// not see a 502, and a killed sandbox's open connections must be cut at once. The gateway
// implements it (apps/warren wires it; the gateway module comes after this one).
//
// Thread-safe; calls never block.
class RouteNotifier {
 public:
  virtual ~RouteNotifier() = default;
  // The sandbox as just written (running, or paused: traffic stops).
  virtual void SandboxChanged(const api::Object& sandbox) = 0;
  // The sandbox was deleted: drop its route and abort its connections. `resource_version` is
  // the revision of the deletion (0 when unknown).
  virtual void SandboxRemoved(std::string_view sandbox_id, std::string_view uid,
                              int64_t resource_version) = 0;
};

}  // namespace warren::server::e2b
