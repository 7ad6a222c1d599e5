#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace warren::server {

// A part of `warren server` with a lifecycle: a controller, the node agent, the E2B API, the
// gateway. The server starts components in the order they were added (before it starts
// serving HTTP) and stops them in reverse order (after HTTP has stopped). Implementations
// decide their own threading; Start and Stop are called from one thread.
class Component {
 public:
  virtual ~Component() = default;
  virtual std::string_view name() const = 0;
  // Starts background work. A failure aborts server start (components already started are
  // stopped).
  virtual Status Start() = 0;
  // Stops and joins background work. Called once, after a successful Start.
  virtual void Stop() = 0;
  // Whether the component is ready to serve (reported by /readyz). Thread-safe.
  virtual bool Ready() const { return true; }
  // What the component serves without (a limit it cannot enforce here), one sentence each;
  // /readyz lists them under "ok" so an operator sees them. Thread-safe.
  virtual std::vector<std::string> Degraded() const { return {}; }
};

}  // namespace warren::server
