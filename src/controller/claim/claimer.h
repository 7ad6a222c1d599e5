#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/object.h"
#include "api/types/sandbox_claim.h"
#include "base/clock.h"
#include "base/result.h"

namespace warren::controller::claim {

enum class ClaimSource { kE2b, kSandboxClaim };

// What an E2B create or a SandboxClaim asks for (contracts.md "Claims").
struct ClaimRequest {
  std::string namespace_, pool;  // pool = SandboxSet name
  std::string owner;             // team / API key id (annotation agents.kruise.io/owner)
  std::map<std::string, std::string> labels, annotations, env_vars;
  std::string access_token;   // for envd /init
  std::string traffic_token;  // non-empty: every port but envd's asks for it (sealed)
  std::optional<base::WallTime> shutdown_time, pause_time;
  bool create_on_no_stock = true;
  std::chrono::milliseconds timeout{60000};

  // Beyond the contract's fields:
  std::string default_user;     // envd's default user for commands and files ("" = envd's own)
  std::string default_workdir;  // envd's default working directory ("" = envd's own)
  bool skip_init = false;       // skip envd /init (SandboxClaim spec.skipInitRuntime)
  // The claimed sandbox's pauses keep files only (spec.pauseStrategy.type Stop; E2B
  // autoPauseMemory false), until it is recycled.
  bool pause_files_only = false;
  // Set on the claimed sandbox in the same write (a SandboxClaim makes itself the owner).
  std::vector<api::OwnerReference> owner_references;
  // How long a cold-created sandbox may take to become Ready (bounded by `timeout`).
  std::chrono::milliseconds wait_ready_timeout{60000};
  // Who asks: the E2B API (metrics source="e2b") or the SandboxClaim controller ("k8s").
  ClaimSource source = ClaimSource::kE2b;
  // Claim-time in-place update (SandboxClaim spec.inplaceUpdate; E2B metadata
  // e2b.agents.kruise.io/image, cpu-request, cpu-limit): the claimed member is given this image
  // and these resources before its /init, and the claim answers once the node has made the
  // change (a cold-created sandbox is made with them).
  std::optional<api::InplaceUpdateSpec> inplace_update;
};

// How the sandbox was obtained (label lock_type of sandbox_claim_total, as the reference).
namespace lock_type {
inline constexpr const char* kUpdate = "update";  // a pool member, taken by one CAS update
inline constexpr const char* kCreate = "create";  // none in stock: created, waited for
}  // namespace lock_type

struct ClaimResult {
  api::Object sandbox;  // as committed: claimed, Running, Ready, initialised
  bool from_pool = false;
  std::string lock_type;
  int retries = 0;  // CAS conflicts lost to other claimers
};

// Hands out sandboxes from warm pools. Errors: NotFound (no such SandboxSet),
// FailedPrecondition (the node could not make the claim's in-place update; that member is
// deleted, and another would fail alike),
// ResourceExhausted (nothing in stock and createOnNoStock false, until the timeout),
// DeadlineExceeded (the claim or a cold create ran out of time), Unavailable (envd /init
// failed; the sandbox was deleted), and store errors. Implementations are thread-safe.
class Claimer {
 public:
  virtual ~Claimer() = default;
  virtual Result<ClaimResult> Claim(const ClaimRequest& request) = 0;
};

}  // namespace warren::controller::claim
