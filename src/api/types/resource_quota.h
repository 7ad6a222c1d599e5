#pragma once

#include <map>
#include <string>

#include "api/types/common.h"

namespace warren::api {

// ResourceQuota (warren.dev/v1alpha1, quota; namespaced): the most a team (a namespace) may
// hold at once, as Kubernetes' core/v1 ResourceQuota but over sandboxes:
//   hard.sandboxes  live sandboxes (every non-finished Sandbox object, warm-pool members too:
//                   they hold their CPU and memory from the moment they start)
//   hard.cpu        the sum of their cpu (limits, else requests, else the node default)
//   hard.memory     the sum of their memory, the same way
// An absent key is unlimited; 0 is a hard zero. Only an admin key writes it; the team reads it,
// with `used` kept current by the server.
struct ResourceQuotaSpec {
  WARREN_API_STRUCT;
  std::map<std::string, Quantity> hard;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("hard", s.hard);
  }
};

struct ResourceQuotaStatus {
  WARREN_API_STRUCT;
  std::map<std::string, Quantity> hard;
  std::map<std::string, Quantity> used;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("hard", s.hard);
    v("used", s.used);
  }
};

// The keys `hard` may hold.
inline constexpr const char* kQuotaSandboxes = "sandboxes";
inline constexpr const char* kQuotaCpu = "cpu";
inline constexpr const char* kQuotaMemory = "memory";

}  // namespace warren::api
