#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace warren::gateway {

// What became of a request the gateway received.
enum class RequestResult {
  kRelayed,       // handed to the sandbox (its own status code is the sandbox's business)
  kNotFound,      // 502: unknown, killed or not running
  kPaused,        // 502: paused, no auto-resume
  kPortNotOpen,   // 502: nothing listens on the port
  kUnauthorized,  // 401: envd traffic without the right access token
  kBadRequest,    // 400: no or malformed routing headers / Host
  kResumeFailed,  // 502: auto-resume did not bring the sandbox back in time
};
inline constexpr int kRequestResultCount = 7;
const char* RequestResultName(RequestResult result);  // label value: "relayed", "not_found", ...

// One sample in Prometheus terms, for the metrics module to expose as is.
struct MetricSample {
  std::string name;  // "warren_gateway_requests_total"
  std::string type;  // "counter" or "gauge"
  std::map<std::string, std::string> labels;
  double value = 0;
};

// The gateway's counters: plain atomics, bumped on the request path without locks. Read them
// through Gateway::MetricSamples(). Thread-safe.
struct GatewayCounters {
  std::atomic<uint64_t> requests[kRequestResultCount] = {};
  std::atomic<uint64_t> upstream_dialed{0};  // new connections into sandboxes
  std::atomic<uint64_t> upstream_reused{0};  // requests that rode an idle keep-alive one
  std::atomic<uint64_t> resumes{0};          // auto-resumes requested

  void Count(RequestResult result) {
    requests[static_cast<int>(result)].fetch_add(1, std::memory_order_relaxed);
  }
  uint64_t Get(RequestResult result) const {
    return requests[static_cast<int>(result)].load(std::memory_order_relaxed);
  }
};

}  // namespace warren::gateway
