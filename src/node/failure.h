#pragma once

#include <string>

namespace warren::node {

// Why a sandbox could not be made (or kept) real, as the agent reports it: the reason goes into
// the Ready condition and the Event (reasons.h), the message to humans. Value type.
struct Failure {
  std::string reason;
  std::string message;
  // Terminal failures end the sandbox (phase Failed); others leave it Pending and are retried.
  bool terminal = true;
};

}  // namespace warren::node
