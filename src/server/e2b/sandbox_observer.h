#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/line_index.h"
#include "base/principal.h"
#include "base/result.h"
#include "server/e2b/node_access.h"
#include "server/e2b/sandbox_service.h"

namespace warren::server::e2b {

// The read-only views E2B offers of a team's sandboxes beyond info: the template command's log
// with timestamps (GET /sandboxes/{id}/logs, /v2/...) and the latest usage sample of several
// sandboxes at once (GET /sandboxes/metrics). Scoped like every E2B call: another team's
// sandbox is NotFound (logs) or left out (metrics). Borrows the service and node access (null:
// no node, so nothing to read). Thread-safe; calls block on file reads.
class SandboxObserver {
 public:
  SandboxObserver(SandboxService& service, NodeAccess* node) : service_(service), node_(node) {}

  Result<std::vector<base::LogLine>> Logs(const auth::Principal& who, std::string_view sandbox_id,
                                          const base::LogLineQuery& query);
  // The newest sample of each id the caller sees and that has one (running sandboxes).
  Result<std::map<std::string, UsageSample>> LatestMetrics(const auth::Principal& who,
                                                           const std::vector<std::string>& ids);

 private:
  SandboxService& service_;
  NodeAccess* const node_;
};

}  // namespace warren::server::e2b
