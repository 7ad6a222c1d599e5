#pragma once

#include <map>
#include <mutex>
#include <string>

#include "api/types/sandbox_set.h"
#include "base/clock.h"
#include "obs/metrics.h"

namespace warren::controller {

// The reference's SandboxSet series (openkruise-agents.md §5.1), labelled {namespace, name},
// constant label source="k8s": gauges sandboxset_replicas, _available_replicas,
// _desired_replicas, _updated_replicas, _updated_available_replicas, sandboxset_created
// (creation time, Unix seconds); counter sandboxset_sandboxes_created_total; and Warren's
// sandboxset_hibernated_replicas (of the available, those paused while idle). A deleted set's
// series are removed. Thread-safe.
class SandboxSetMetrics {
 public:
  explicit SandboxSetMetrics(obs::Metrics& metrics = obs::Metrics::Default());

  void Set(const std::string& ns, const std::string& name, int32_t desired,
           const api::SandboxSetStatus& status, base::WallTime created);
  void Created(const std::string& ns, const std::string& name, int count);
  void Remove(const std::string& ns, const std::string& name);

 private:
  struct Series {
    prometheus::Gauge *replicas, *available, *desired, *updated, *updated_available, *created,
        *hibernated;
    prometheus::Counter* sandboxes_created;
  };
  Series& SeriesFor(const std::string& ns, const std::string& name);  // mu_ held

  obs::GaugeFamily &replicas_, &available_, &desired_, &updated_, &updated_available_, &created_,
      &hibernated_;
  obs::CounterFamily& sandboxes_created_;
  std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> series_;  // guarded by mu_
};

}  // namespace warren::controller
