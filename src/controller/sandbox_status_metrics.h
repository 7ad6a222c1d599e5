#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

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
// Series are found by their labels at each update rather than kept as pointers: two instances
// on one registry (a server restarted inside a test process) share them, and one removing a
// series must not leave the other holding it. Series outlive the instance (the next one over
// the same store takes them over). Borrows the store and the registry; Start/Stop from one
// thread; thread-safe otherwise.
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

  obs::GaugeFamily &phase_, &ready_, &created_, &deletion_, &info_;
  std::unique_ptr<Informer> informer_;
  std::mutex mu_;
  // The labels of each Sandbox's sandbox_info series (they change: node, pool), to remove the
  // old one. Guarded by mu_.
  std::map<std::pair<std::string, std::string>, obs::Labels> info_labels_;
};

}  // namespace warren::controller
