#pragma once

#include <string>

#include "api/object.h"
#include "api/sandbox_secrets.h"
#include "base/clock.h"
#include "base/result.h"
#include "controller/claim/claimer.h"

namespace warren::controller::claim {

// The /init body for envd: {envVars, accessToken, defaultUser, defaultWorkdir} (fields that are
// empty in the request are left out, so envd keeps its own). Sealed on the object
// (api/sandbox_secrets.h) so the node agent replays it after a resume or restart.
std::string InitBody(const ClaimRequest& request);

// A claim's lock (annotation agents.kruise.io/lock): a fresh UUID, and "@<replica>" naming the
// server replica that made the claim when `replica` is not empty — "6f1c…@warren-a". The
// janitors of other replicas read the name to leave a live replica's pending claims alone.
std::string NewClaimLock(std::string_view replica);
// The replica a lock names; "" for a lock that names none (made before replicas named
// themselves, or by a single server without a name).
std::string_view ReplicaOfLock(std::string_view lock);

// Marks `sandbox` claimed by `request`, in memory (reference §3.9 step 7): the pool's owner
// reference removed (the request's owner references put instead), label sandbox-claimed=true
// plus the request's labels, annotations lock, owner, claim-timestamp, claim-pending
// (= `pending_deadline`), updated-metadata-in-claim (the user keys added, removed again on
// recycle) plus the request's annotations, the sealed access token and /init body, and
// spec.shutdownTime / pauseTime. Request labels and annotations never overwrite the pool's
// own keys (sandbox-pool, template-hash, sandbox-id, claimed) or set a secret.
void ApplyClaim(api::Object& sandbox, const ClaimRequest& request, const std::string& lock,
                base::WallTime now, base::WallTime pending_deadline,
                const api::SandboxSecrets& secrets);

// Puts a claimed sandbox back into `set`'s pool, in memory (the reference's
// resetMetadataForPool): owner reference to the set only, sandbox-claimed=false, the claim's
// annotations and labels gone (and the user keys recorded at claim), no shutdown or pause
// time, not paused. The sandbox id stays (it is immutable: the runtime id and hostname), so a
// previous user still knows it: `pool_token` (when not empty) becomes the sandbox's access
// token and /init body, a secret nobody outside the control plane holds, so the gateway keeps
// everyone out of the idle member until the next claim replaces it.
void ResetForPool(api::Object& sandbox, const api::Object& set, const std::string& pool_token,
                  const api::SandboxSecrets& secrets);

// Claim-time in-place update, in memory: `pod_template` (the template the sandbox runs: its
// templateRef's, for a pool member) with the main container's image and the resources of
// `update` (each request and limit it names replaces the template's), written inline as the
// sandbox's spec.template, its templateRef dropped. Returns that template's hash, which is
// status.updateRevision once the node has made the change (api/inplace_update.h).
// InvalidArgument when the template cannot be read or has no container.
Result<std::string> ApplyInplaceUpdate(api::Object& sandbox, const api::Json& pod_template,
                                       const api::InplaceUpdateSpec& update);

// Seals `token` as the sandbox's access token and the /init body the node replays, in memory.
void SetPoolToken(api::Object& sandbox, const std::string& token,
                  const api::SandboxSecrets& secrets);

}  // namespace warren::controller::claim
