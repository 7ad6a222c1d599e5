#include "runtime/runtime.h"

namespace warren::runtime {

std::string_view SandboxStateName(SandboxState s) {
  switch (s) {
    case SandboxState::kCreated:
      return "created";
    case SandboxState::kRunning:
      return "running";
    case SandboxState::kPaused:
      return "paused";
    case SandboxState::kStopped:
      return "stopped";
  }
  return "unknown";
}

}  // namespace warren::runtime
