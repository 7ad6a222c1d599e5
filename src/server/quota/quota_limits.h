#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/resources.h"

namespace warren::server::quota {

// What a namespace holds: its live sandboxes and the sum of their cpu and memory. Value type.
struct Usage {
  int64_t sandboxes = 0;
  int64_t cpu_millicores = 0;
  int64_t memory_bytes = 0;
  friend bool operator==(const Usage&, const Usage&) = default;
};

// The tightest limit of each dimension over a namespace's ResourceQuota objects (-1 = none),
// with the quota that sets it, for the message. Value type.
struct Limits {
  int64_t sandboxes = -1;
  int64_t cpu_millicores = -1;
  int64_t memory_bytes = -1;
  std::string sandboxes_from, cpu_from, memory_from;

  bool any() const { return sandboxes >= 0 || cpu_millicores >= 0 || memory_bytes >= 0; }
};

// The limits of `quotas` (ResourceQuota objects of one namespace; ones that do not decode are
// skipped: admission let nothing like that in).
Limits LimitsOf(const std::vector<const api::Object*>& quotas);

// When `used` plus one sandbox of `add` goes over a limit: why, in Kubernetes' words
// ("exceeded quota: team-a, requested: sandboxes=1, used: sandboxes=10, limited: sandboxes=10").
std::optional<std::string> Exceeds(const Limits& limits, const Usage& used,
                                   const api::SandboxFootprint& add);

// status.used / status.hard of a ResourceQuota: {"sandboxes": "3", "cpu": "1500m", ...}.
api::Json UsageJson(const Usage& used);
api::Json LimitsJson(const Limits& limits);

}  // namespace warren::server::quota
