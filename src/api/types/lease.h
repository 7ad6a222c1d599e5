#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "api/types/common.h"

namespace warren::api {

// Lease (coordination.k8s.io/v1, namespaced): Kubernetes' coordination Lease, the record a
// holder renews to say it is alive and, for a named Lease, that it leads. Warren's replicas keep
// theirs in the `warren-system` namespace (controller/leader/): the controllers' leader lease
// and one liveness lease per replica. Only the control plane (an admin key) reads or writes
// them. Times are MicroTime on the wire (RFC 3339 with 6 fractional digits), kept as text here.
struct LeaseSpec {
  WARREN_API_STRUCT;
  std::string holder_identity;  // "" = released
  std::optional<int32_t> lease_duration_seconds;
  std::string acquire_time;  // MicroTime
  std::string renew_time;    // MicroTime
  std::optional<int32_t> lease_transitions;

  template <class S, class V>
  static void Fields(S& s, V& v) {
    v("holderIdentity", s.holder_identity);
    v("leaseDurationSeconds", s.lease_duration_seconds);
    v("acquireTime", s.acquire_time);
    v("renewTime", s.renew_time);
    v("leaseTransitions", s.lease_transitions);
  }
};

struct KindInfo;
// The Lease kind (registered with the built-in kinds in api/kinds.cc).
const KindInfo& LeaseKind();

inline constexpr const char* kCoordinationGroup = "coordination.k8s.io";
inline constexpr const char* kCoordinationApiVersion = "coordination.k8s.io/v1";
// Where the control plane keeps its own objects (Leases).
inline constexpr const char* kSystemNamespace = "warren-system";

}  // namespace warren::api
