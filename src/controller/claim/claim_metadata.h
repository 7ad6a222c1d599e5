#pragma once

#include <string>

#include "api/object.h"
#include "base/clock.h"
#include "controller/claim/claimer.h"

namespace warren::controller::claim {

// The /init body for envd: {envVars, accessToken, defaultUser, defaultWorkdir} (fields that are
// empty in the request are left out, so envd keeps its own). Stored in the annotation
// agents.kruise.io/init-runtime-request so the node agent replays it after a resume or restart.
std::string InitBody(const ClaimRequest& request);

// Marks `sandbox` claimed by `request`, in memory (reference §3.9 step 7): the pool's owner
// reference removed (the request's owner references put instead), label sandbox-claimed=true
// plus the request's labels, annotations lock, owner, claim-timestamp, claim-pending
// (= `pending_deadline`), runtime-access-token, init-runtime-request, updated-metadata-in-claim
// (the user keys added, removed again on recycle) plus the request's annotations, and
// spec.shutdownTime / pauseTime. Request labels and annotations never overwrite the pool's
// own keys (sandbox-pool, template-hash, sandbox-id, claimed).
void ApplyClaim(api::Object& sandbox, const ClaimRequest& request, const std::string& lock,
                base::WallTime now, base::WallTime pending_deadline);

// Puts a claimed sandbox back into `set`'s pool, in memory (the reference's
// resetMetadataForPool): owner reference to the set only, sandbox-claimed=false, the claim's
// annotations and labels gone (and the user keys recorded at claim), no shutdown or pause
// time, not paused. The sandbox id stays (it is immutable: the runtime id and hostname), so a
// previous user still knows it: `pool_token` (when not empty) becomes the sandbox's access
// token and /init body, a secret nobody outside the control plane holds, so the gateway keeps
// everyone out of the idle member until the next claim replaces it.
void ResetForPool(api::Object& sandbox, const api::Object& set, const std::string& pool_token);

// Sets `token` as the sandbox's access token and the /init body the node replays, in memory.
void SetPoolToken(api::Object& sandbox, const std::string& token);

// Removes what lets a previous user in or configures envd for them (token, /init body), in
// memory — done before the runtime is reset, so the node agent's replay of /init after the
// restart cannot bring the old token back.
void ForgetClaimant(api::Object& sandbox);

}  // namespace warren::controller::claim
