#pragma once

#include "net/router.h"
#include "server/e2b/node_access.h"
#include "store/store.h"

namespace warren::server::e2b {

// E2B's team volumes over Warren's Volume objects (api/types/volume.h) in the caller's team
// namespace (the SDK's Volume.create/list/getInfo/destroy):
//   POST   /volumes {name}        201 {volumeID, name, token}; 400 a name that is not a DNS-1123
//                                 label (lower-case letters, digits, '-'), 409 a name taken
//   GET    /volumes               200 [{volumeID, name}]
//   GET    /volumes/{volumeID}    200 {volumeID, name, token}; by id or name; 404 otherwise
//   DELETE /volumes/{volumeID}    204; 409 while a sandbox mounts it (naming them), 404 unknown
// volumeID is the object's uid. Another team's volume is 404 everywhere (an admin key sees its
// own team's, as with sandboxes). The size is the Volume default (1Gi); a Volume made through
// the resource API may name another. `token` is empty: Warren does not serve E2B's volume
// content API (/volumecontent), so a volume's files are reached by mounting it in a sandbox.
// Borrows the store and node access, which outlive the router.
void RegisterVolumeRoutes(net::Router& router, store::Store& store, NodeAccess* node,
                          size_t max_body_bytes);

}  // namespace warren::server::e2b
