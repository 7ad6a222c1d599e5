#pragma once

#include <chrono>

#include "base/status.h"
#include "gateway/route.h"

namespace warren::gateway {

// Wakes a paused sandbox whose route has auto_resume (E2B autoResume: traffic resumes it).
// Implemented by the control plane (set spec.paused=false and let the node agent resume it).
// Thread-safe; Resume blocks (the gateway calls it on its dial threads) until the resume was
// requested or failed. The gateway then waits for the route to turn running (the store watch
// or a direct upsert), so Resume need not wait for that itself.
class Resumer {
 public:
  virtual ~Resumer() = default;
  virtual Status Resume(const Route& route, std::chrono::milliseconds timeout) = 0;
  // Pauses a sandbox that was idle for its route's idle_pause_seconds, the way its
  // pauseStrategy says, so that traffic wakes it again. Default: not supported.
  virtual Status PauseIdle(const Route& route) {
    (void)route;
    return UnimplementedError("idle pause is not wired");
  }
};

}  // namespace warren::gateway
