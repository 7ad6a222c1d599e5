#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/object.h"
#include "base/clock.h"
#include "base/line_index.h"
#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::server::e2b {

// One resource sample of a running sandbox, as E2B's metrics endpoint reports it.
struct UsageSample {
  base::WallTime time{};
  int32_t cpu_count = 0;
  double cpu_used_pct = 0;  // of cpu_count cores, 0..100
  uint64_t mem_used = 0;    // bytes
  uint64_t mem_total = 0;
  uint64_t mem_cache = 0;
  uint64_t disk_used = 0;
  uint64_t disk_total = 0;
};

// What the E2B layer needs from the node agent that runs the sandboxes: a socket into a
// sandbox (to reach its envd for /init) and the sandbox's recent resource samples. The node
// agent implements it (apps/warren wires it); the E2B layer never touches the runtime itself.
//
// Implementations are thread-safe and may block (the E2B handlers run on the blocking pool).
class NodeAccess {
 public:
  virtual ~NodeAccess() = default;

  // A connected TCP socket to 127.0.0.1:port inside the sandbox's network namespace.
  // NotFound/FailedPrecondition when the sandbox is unknown or not running, Unavailable when
  // nothing listens there.
  virtual Result<base::UniqueFd> Dial(std::string_view sandbox_id, uint16_t port,
                                      std::chrono::milliseconds timeout) = 0;

  // The samples kept for the sandbox (the node samples every 5 s and keeps a bounded ring),
  // oldest first; empty when there are none.
  virtual std::vector<UsageSample> Usage(std::string_view sandbox_id) = 0;

  // The lines of the sandbox's template command log that `query` selects (NotFound when the
  // node has no log for it).
  virtual Result<std::vector<base::LogLine>> Logs(std::string_view sandbox_id,
                                                  const base::LogLineQuery& query) = 0;

  // Puts the Sandbox object's network annotation (api::annotations::kNetwork) in force now.
  virtual Status ApplyNetwork(const api::Object& sandbox) = 0;
  // Where Volume `namespace_`/`name` lives on this host, and the host uid of a sandbox's root
  // (its files' ids are relative to it); NotFound when it is not available here.
  virtual Result<std::pair<std::string, uint32_t>> VolumeDir(const std::string& namespace_,
                                                             const std::string& name) = 0;
  // The ids of the sandboxes that mount Volume `namespace_`/`name` now (node/volume_agent.h).
  virtual std::vector<std::string> VolumeMountedBy(const std::string& namespace_,
                                                   const std::string& name) = 0;
};

}  // namespace warren::server::e2b
