#include "controller/leader/replica_liveness.h"

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/lease.h"
#include "controller/leader/leader_elector.h"

namespace warren::controller::leader {

ReplicaLiveness::ReplicaLiveness(store::Store& store, std::chrono::milliseconds default_duration,
                                 base::Clock& clock)
    : store_(store), default_duration_(default_duration), clock_(clock) {}

bool ReplicaLiveness::IsAlive(std::string_view replica) {
  const base::MonoTime now = clock_.Monotonic();
  auto lease = store_.Get(api::LeaseKind(), api::kSystemNamespace, ReplicaLeaseName(replica));
  if (!lease.ok()) return lease.status().code() != StatusCode::kNotFound;
  auto spec = api::DecodeSpec<api::LeaseSpec>(*lease);
  if (!spec.ok() || spec->holder_identity.empty()) return false;
  std::chrono::milliseconds duration = default_duration_;
  if (spec->lease_duration_seconds && *spec->lease_duration_seconds > 0) {
    duration = std::chrono::seconds(*spec->lease_duration_seconds);
  }
  std::lock_guard lock(mu_);
  auto [it, inserted] = seen_.try_emplace(std::string(replica));
  if (inserted || it->second.resource_version != lease->metadata.resource_version) {
    it->second = Seen{lease->metadata.resource_version, now};
  }
  return now < it->second.since + duration;
}

}  // namespace warren::controller::leader
