#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "api/types/pod_template.h"
#include "base/clock.h"
#include "node/envd_client.h"
#include "node/sandbox_plan.h"
#include "node/stats_ring.h"
#include "runtime/runtime.h"

namespace warren::node {

struct ResetRequest;    // reset.cc
struct CaptureRequest;  // capture.cc

// What the node agent keeps about a sandbox it made or adopted.
struct LocalSandbox {
  std::string id;
  std::string key;  // "namespace/name"
  std::string namespace_;
  std::string name;
  std::string uid;
  RestartPolicy restart_policy = RestartPolicy::kAlways;
  bool has_command = false;
  int64_t cpu_millicores = 0;    // its cpu limit; 0 = none
  int64_t disk_limit_bytes = 0;  // its file system's size (ephemeral-storage); 0 = unbounded
  std::string network;           // the egress annotations (EgressAnnotationsOf) last applied
  runtime::SandboxState state = runtime::SandboxState::kCreated;
  bool ready = false;
  // Its envd follows the init channel (SandboxPlan::init_channel): /init bodies go there.
  bool init_channel = false;
  std::optional<base::MonoTime> restart_at;  // set while waiting to restart (backoff)
  std::optional<uint64_t> oom_kills_seen;    // cgroup counter at the last sample
  uint64_t oom_kills_reported = 0;
  StatsRing stats{0};
  std::shared_ptr<EnvdClient> envd;
  std::shared_ptr<ResetRequest> reset;  // a Reset waiting for this sandbox's reconcile
  std::vector<std::shared_ptr<CaptureRequest>> captures;  // waiting for it too
  // Probes (probe_hooks.cc): resolved for this run of pid 1; the kill a probe asked for, which
  // the exit then reports; the auto-pause in progress, which the Paused status then explains.
  bool probes_tracked = false;
  std::optional<std::string> probe_kill;
  std::optional<std::string> auto_paused;
  // A hibernate whose checkpoint failed and ended the processes: the files-only pause still to
  // be written (its exit is that pause, not a crash), with the reason.
  std::optional<std::string> hibernate_failed;
  // In-place updates (inplace_update.cc): the template it runs and that template's hash
  // (status.updateRevision), and the object generation whose template was last compared with
  // it, so a pass over an unchanged spec costs nothing.
  std::optional<api::PodTemplateSpec> running_template;
  std::string revision;
  int64_t template_checked_generation = -1;
  // The spec that generation had: a later generation whose spec differs only in its timers (a
  // claim's or a timeout's shutdownTime / pauseTime) needs no new comparison.
  std::optional<api::Json> template_checked_spec;
};

// The node agent's sandboxes by sandbox id, behind one lock that every access takes: callers
// say what to do with an entry (a function run under the lock) instead of finding it
// themselves, so no entry is ever touched unlocked or kept past the lock. The functions must
// not block or call back into the table. Thread-safe.
class LocalTable {
 public:
  // Runs fn(LocalSandbox&) on the entry; false, without calling fn, when there is none.
  template <class Fn>
  bool With(std::string_view id, Fn&& fn) {
    std::lock_guard lock(mu_);
    auto it = map_.find(id);
    if (it == map_.end()) return false;
    fn(it->second);
    return true;
  }
  template <class Fn>
  bool With(std::string_view id, Fn&& fn) const {
    std::lock_guard lock(mu_);
    auto it = map_.find(id);
    if (it == map_.end()) return false;
    fn(it->second);
    return true;
  }
  // With for an event loop, which must never wait: nullopt when the lock is held elsewhere.
  template <class Fn>
  std::optional<bool> TryWith(std::string_view id, Fn&& fn) const {
    std::unique_lock lock(mu_, std::try_to_lock);
    if (!lock) return std::nullopt;
    auto it = map_.find(id);
    if (it == map_.end()) return false;
    fn(it->second);
    return true;
  }
  // Runs fn(const LocalSandbox&) on every entry, by id.
  template <class Fn>
  void ForEach(Fn&& fn) const {
    std::lock_guard lock(mu_);
    for (const auto& [id, local] : map_) fn(local);
  }
  // Runs fn(const LocalSandbox&) on every entry of the object `key` ("namespace/name"; more than
  // one while an older object's sandbox under the same name is still being destroyed). Costs
  // what those entries cost, not a walk over the table: each reconcile asks.
  template <class Fn>
  void ForEachOfKey(std::string_view key, Fn&& fn) const {
    std::lock_guard lock(mu_);
    auto ids = by_key_.find(key);
    if (ids == by_key_.end()) return;
    for (const std::string& id : ids->second) {
      auto it = map_.find(id);
      if (it != map_.end()) fn(it->second);
    }
  }

  bool Contains(std::string_view id) const;
  // Inserts or replaces the entry of local.id. An entry's key is fixed from here on (functions
  // given to With must not change it).
  void Put(LocalSandbox local);
  // Removes the entry when it is still the incarnation `uid`; whether it did.
  bool Erase(std::string_view id, std::string_view uid);

 private:
  void Unindex(const std::string& key, const std::string& id);

  mutable std::mutex mu_;
  std::map<std::string, LocalSandbox, std::less<>> map_;              // guarded by mu_
  std::map<std::string, std::set<std::string>, std::less<>> by_key_;  // key → ids; guarded by mu_
};

}  // namespace warren::node
