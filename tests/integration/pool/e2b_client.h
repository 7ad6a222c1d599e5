#pragma once

#include <string>

#include "api/json.h"
#include "base/result.h"
#include "processes.h"

namespace warren::pool_testing {

// The admin API key of a server's data directory, made the way run.sh makes it
// (`warren apikey bootstrap`); call before the server starts.
std::string BootstrapAdminKey(WarrenServer& server);

// E2B REST calls as the SDKs make them (X-API-Key, JSON). Thread-safe.
class E2bClient {
 public:
  E2bClient(WarrenServer& server, std::string key) : server_(server), key_(std::move(key)) {}
  // POST /sandboxes: the response body (201), or an error naming the status and body. A
  // non-empty `traceparent` is sent as that header (the server parents its spans on it).
  Result<api::Json> Create(const std::string& template_id, bool create_on_no_stock = true,
                           const api::Json& env_vars = api::Json::object(),
                           const std::string& traceparent = "");
  Status Kill(const std::string& sandbox_id);

 private:
  WarrenServer& server_;
  std::string key_;
};

// Sandbox objects through the resource API.
Result<std::vector<api::Json>> ListSandboxes(WarrenServer& server, const std::string& selector);
// The integer status.<field> of a SandboxSet in "default" (0 when absent, -1 when the set
// cannot be read); AvailableReplicas is its availableReplicas.
int SetStatusCount(WarrenServer& server, const std::string& set, const std::string& field);
int AvailableReplicas(WarrenServer& server, const std::string& set);

// A SandboxSet manifest on the cached `base` image.
std::string PoolManifest(const std::string& name, int replicas, const std::string& extra_spec = "");

}  // namespace warren::pool_testing
