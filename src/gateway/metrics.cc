#include "gateway/metrics.h"

namespace warren::gateway {

const char* RequestResultName(RequestResult result) {
  switch (result) {
    case RequestResult::kRelayed:
      return "relayed";
    case RequestResult::kNotFound:
      return "not_found";
    case RequestResult::kPaused:
      return "paused";
    case RequestResult::kPortNotOpen:
      return "port_not_open";
    case RequestResult::kUnauthorized:
      return "unauthorized";
    case RequestResult::kBadRequest:
      return "bad_request";
    case RequestResult::kResumeFailed:
      return "resume_failed";
  }
  return "unknown";
}

}  // namespace warren::gateway
