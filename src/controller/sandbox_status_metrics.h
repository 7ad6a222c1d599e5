#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "controller/informer.h"
#include "obs/metrics.h"
#include "store/store.h"

namespace warren::controller {

// The reference's per-Sandbox gauges (openkruise-agents.md §5.1, controller side, constant
// label source="k8s"), labelled {namespace,name}:
//   sandbox_status_phase{phase}   1 for the sandbox's phase, 0 for every other phase
//   sandbox_status_ready          1 while its Ready condition is True
//   sandbox_created               creationTimestamp (Unix seconds)
//   sandbox_deletion_timestamp    deletionTimestamp, once it is being deleted
//   sandbox_info{sandbox_pool,node,sandbox_template}   1
// kept by its own informer over every Sandbox (the pool informers see pool members only). A
// deleted Sandbox's series are removed, so the series count follows the live sandboxes.
// The series live in a table of this instance, one row per Sandbox, rendered at each scrape
// (obs::Metrics::AddFamilySource): a watch event costs a row's update, whatever the number of
// sandboxes (prometheus-cpp families remove a series by walking all of them: with 1,000 pool
// members that was ~10 % of the server's CPU while they were claimed and killed). A newer
// instance on the same registry (a server restarted inside a test process) takes the series
// over. Borrows the store and the registry; Start/Stop from one thread; thread-safe otherwise.
class SandboxStatusMetrics {
 public:
  explicit SandboxStatusMetrics(store::Store& store,
                                obs::Metrics& metrics = obs::Metrics::Default());
  ~SandboxStatusMetrics();
  SandboxStatusMetrics(const SandboxStatusMetrics&) = delete;
  SandboxStatusMetrics& operator=(const SandboxStatusMetrics&) = delete;

  Status Start();
  void Stop();

  // What the informer's handler does; public for tests.
  void Update(const api::Object& sandbox);
  void Remove(const std::string& ns, const std::string& name);

 private:
  static constexpr int kPhases = 9;

  // What one Sandbox's series say.
  struct Row {
    int phase = -1;  // index into the phase names; -1: none of them (no status yet)
    bool ready = false;
    std::optional<double> created, deletion;  // Unix seconds
    std::string pool, node, template_name;
  };
  std::vector<prometheus::MetricFamily> Render() const;

  obs::Metrics& metrics_;
  std::unique_ptr<Informer> informer_;
  mutable std::mutex mu_;
  // By namespace and name, so a scrape lists them in order. Guarded by mu_.
  std::map<std::pair<std::string, std::string>, Row> rows_;
  int source_id_ = 0;
};

}  // namespace warren::controller
