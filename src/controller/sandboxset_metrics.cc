#include "controller/sandboxset_metrics.h"

namespace warren::controller {
namespace {
const obs::Labels kSource = {{"source", "k8s"}};
}  // namespace

SandboxSetMetrics::SandboxSetMetrics(obs::Metrics& m)
    : replicas_(m.Gauge("sandboxset_replicas", "Pool members (creating + available).", kSource)),
      available_(m.Gauge("sandboxset_available_replicas",
                         "Pool members Running, Ready and unclaimed.", kSource)),
      desired_(m.Gauge("sandboxset_desired_replicas", "spec.replicas of the SandboxSet.", kSource)),
      updated_(
          m.Gauge("sandboxset_updated_replicas", "Pool members at the update revision.", kSource)),
      updated_available_(m.Gauge("sandboxset_updated_available_replicas",
                                 "Available pool members at the update revision.", kSource)),
      created_(m.Gauge("sandboxset_created", "Creation time of the SandboxSet (Unix seconds).",
                       kSource)),
      hibernated_(m.Gauge("sandboxset_hibernated_replicas",
                          "Available pool members paused while idle (woken by a claim).", kSource)),
      sandboxes_created_(m.Counter("sandboxset_sandboxes_created_total",
                                   "Sandboxes the SandboxSet controller created.", kSource)) {}

SandboxSetMetrics::Series& SandboxSetMetrics::SeriesFor(const std::string& ns,
                                                        const std::string& name) {
  auto key = std::make_pair(ns, name);
  auto it = series_.find(key);
  if (it != series_.end()) return it->second;
  obs::Labels l = {{"namespace", ns}, {"name", name}};
  Series s{&replicas_.Add(l),   &available_.Add(l),         &desired_.Add(l),
           &updated_.Add(l),    &updated_available_.Add(l), &created_.Add(l),
           &hibernated_.Add(l), &sandboxes_created_.Add(l)};
  return series_.emplace(key, s).first->second;
}

void SandboxSetMetrics::Set(const std::string& ns, const std::string& name, int32_t desired,
                            const api::SandboxSetStatus& status, base::WallTime created) {
  std::lock_guard lock(mu_);
  Series& s = SeriesFor(ns, name);
  s.replicas->Set(status.replicas);
  s.available->Set(status.available_replicas);
  s.desired->Set(desired);
  s.updated->Set(status.updated_replicas);
  s.updated_available->Set(status.updated_available_replicas);
  s.created->Set(std::chrono::duration<double>(created.time_since_epoch()).count());
  s.hibernated->Set(status.hibernated_replicas);
}

void SandboxSetMetrics::Created(const std::string& ns, const std::string& name, int count) {
  std::lock_guard lock(mu_);
  SeriesFor(ns, name).sandboxes_created->Increment(count);
}

void SandboxSetMetrics::Remove(const std::string& ns, const std::string& name) {
  std::lock_guard lock(mu_);
  auto it = series_.find({ns, name});
  if (it == series_.end()) return;
  Series& s = it->second;
  replicas_.Remove(s.replicas);
  available_.Remove(s.available);
  desired_.Remove(s.desired);
  updated_.Remove(s.updated);
  updated_available_.Remove(s.updated_available);
  created_.Remove(s.created);
  hibernated_.Remove(s.hibernated);
  sandboxes_created_.Remove(s.sandboxes_created);
  series_.erase(it);
}

}  // namespace warren::controller
