#pragma once

#include <string_view>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object.h"
#include "base/principal.h"
#include "base/result.h"
#include "base/status.h"

namespace warren::server::auth {

// What a team key may do through the resource API (an admin key may do anything). Pure
// functions of the caller and the objects, so every rule is unit-tested without a server:
//   - its team's namespace only: anything in another namespace is NotFound, worded as the
//     store words a missing object, so another team's objects do not even show they exist;
//   - cluster-scoped kinds (Node) and the control plane's own (Lease) are PermissionDenied;
//   - kinds the control plane writes (Event, ResourceQuota) are read-only;
//   - status subresources are the node's and the controllers': read-only;
//   - no hostPath volume in a pod template (it would be the host's file system inside a
//     sandbox it controls), unless an admin put exactly that volume there before;
//   - the keys the control plane owns on a Sandbox (owner, claim lock and timestamps, the
//     sandbox id, the sealed access token and /init request) cannot be set or changed.

enum class Verb { kRead, kWrite };

// Whether `who` may address namespace `ns` of `kind` at all ("" = every namespace, a list or
// watch the caller will see filtered to its team). `name` words the NotFound.
Status CheckTenantScope(const base::Principal& who, const api::KindInfo& kind, std::string_view ns,
                        std::string_view name, Verb verb);

// Whether `who` may write `object` (`old` is what is stored; null on create) through the main
// resource, or, with `status`, through the status subresource.
Status CheckTenantWrite(const base::Principal& who, const api::KindInfo& kind,
                        const api::Object* old, const api::Object& object, bool status);

// The same for a merge patch of an existing object, judged on the patch document: a patch that
// names a protected key or brings a hostPath volume is refused.
Status CheckTenantPatch(const base::Principal& who, const api::KindInfo& kind,
                        const api::Json& patch, bool status);

// What `who`'s merge patch of the main resource makes of `current`, if `who` may make it. A
// team key's patch is judged on its result as well as on what it names:
// {"metadata":{"annotations":null}} names no key yet removes every one, the control plane's
// included. The caller writes the result only over the revision judged (see ResourceApi).
Result<api::Object> TenantPatchResult(const base::Principal& who, const api::KindInfo& kind,
                                      const api::Object& current, const api::Json& patch);

}  // namespace warren::server::auth
