#pragma once

#include "api/sandbox_secrets.h"
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
//   DELETE /volumes/{volumeID}    204; 409 while a live sandbox mounts it (naming them; one
//                                 being deleted does not count: the node's finalizer waits for
//                                 it), 404 unknown
// volumeID is the object's uid. Another team's volume is 404 everywhere (an admin key sees its
// own team's, as with sandboxes). The size is the Volume default (1Gi); a Volume made through
// the resource API may name another.
//
// E2B's volume content API, authenticated by the volume's `token` (Authorization: Bearer; made
// from the install's key and the volume's uid, so a deleted and re-created volume has another),
// not by an API key — the SDK's Volume methods, with E2B_VOLUME_API_URL set to the API's URL:
//   GET    /volumecontent/{id}/dir?path=&depth=        200 [entry]
//   POST   /volumecontent/{id}/dir?path=&uid=&gid=&mode=&force=   201 entry
//   GET    /volumecontent/{id}/path?path=              200 entry
//   PATCH  /volumecontent/{id}/path?path= {uid,gid,mode}   200 entry
//   DELETE /volumecontent/{id}/path?path=              204 (a directory with its contents)
//   GET    /volumecontent/{id}/file?path=              200 the bytes
//   PUT    /volumecontent/{id}/file?path=&uid=&gid=&mode=  200 entry (parents made)
// Files up to 64 MiB each way. Entries: {name, path, type, size, mode, uid, gid, atime, mtime,
// ctime, target?}. A missing or wrong token is 401, an unknown volume or path 404, a full
// volume 507. Nothing in the volume is followed out of it (volume_files.h).
// Borrows the store, secrets and node access, which outlive the router.
void RegisterVolumeRoutes(net::Router& router, store::Store& store,
                          const api::SandboxSecrets& secrets, NodeAccess* node,
                          size_t max_body_bytes);
// The content routes alone (RegisterVolumeRoutes adds them).
void RegisterVolumeContentRoutes(net::Router& router, store::Store& store,
                                 const api::SandboxSecrets& secrets, NodeAccess* node);

}  // namespace warren::server::e2b
