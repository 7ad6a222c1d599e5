#pragma once

// The Kubernetes write rules every backend applies: preconditions, server-owned fields,
// generation, status subresource, finalizers, owner-reference garbage collection decisions,
// and the error wording of store.h. Pure functions from (what is stored, what was asked, the
// time and a fresh uid) to what to write or a Status; the backend reads before and writes
// after, atomically in its own way (SQLite: inside the writer's transaction; etcd: a
// compare-and-swap on the key's revision). Thread-safe (no state).

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "api/json.h"
#include "api/kinds.h"
#include "api/object.h"
#include "base/clock.h"
#include "base/result.h"
#include "store/store.h"

namespace warren::store {

// An object as a backend read it: the document and the revision of its latest change
// (object.metadata.resource_version holds the same revision).
struct StoredObject {
  api::Object object;
  int64_t revision = 0;
};

namespace rules {

// ---- Error wording (store.h) ----
Status NotFound(const api::KindInfo& kind, std::string_view name);
Status AlreadyExists(const api::KindInfo& kind, std::string_view name);
Status Conflict(const api::KindInfo& kind, std::string_view name, std::string_view detail);
Status UnknownKind(const api::Object& object);
// No free name after kGenerateNameAttempts tries of generateName.
Status NoFreeGeneratedName(const api::KindInfo& kind, std::string_view generate_name);
Status TooLarge(const api::KindInfo& kind, std::string_view name, size_t bytes, size_t limit);
// A paged list whose revision was compacted away (OutOfRange, 410).
Status ContinueTooOld(int64_t revision, int64_t oldest_kept);
// A watch from a revision older than the history (OutOfRange, 410).
Status WatchTooOld(int64_t revision, int64_t oldest_available);
// A watch from a revision the store has not reached (InvalidArgument).
Status WatchFromTheFuture(int64_t revision, int64_t current);

Status CheckPreconditions(const api::KindInfo& kind, const StoredObject& current,
                          const Preconditions& pre);

// ---- Create ----
constexpr int kGenerateNameAttempts = 8;
// Checks and clears what a create may not set, drops the status of kinds with a status
// subresource and runs admission. Before the backend reads anything.
Status PrepareCreate(const api::KindInfo& kind, api::Object& object);
// The name to try: metadata.name, or generateName plus a fresh 5-character suffix.
std::string CandidateName(const api::Object& object);
// The server-owned fields of a new object, once the backend has a free name for it.
void StampCreated(api::Object& object, std::string uid, base::WallTime now);

// ---- Update, patch ----
// Refuses a status write to a kind without a status subresource; clears the namespace of
// cluster-scoped kinds.
Status PrepareUpdate(const api::KindInfo& kind, api::Object& object, Subresource subresource);
// What an update's metadata asks to hold: its resourceVersion and uid.
Preconditions UpdatePreconditions(const api::Object& object);
Status CheckPatch(const api::KindInfo& kind, const api::Json& merge_patch, Subresource subresource);
// The stored object with the merge patch applied; the name, namespace, apiVersion and kind may
// not change, and a resourceVersion in the patch must match the stored revision.
Result<api::Object> ApplyPatch(const api::KindInfo& kind, const StoredObject& current,
                               const api::Json& merge_patch);

// ---- What to write ----
enum class Action {
  kNone,    // nothing changes: `object` is the stored state, returned as is
  kPut,     // store `object` as the key's new state (the backend assigns its revision)
  kRemove,  // delete the key; `object` is its last state (it gets the deletion's revision)
};
struct Write {
  Action action = Action::kNone;
  api::Object object;
};

// An update (or patched object) applied to the stored one: server-owned fields kept, the status
// or everything but the status written, generation bumped on a spec change, no new finalizers
// on a deleting object, and the object removed once its last finalizer goes. Preconditions are
// the caller's (CheckPreconditions).
Result<Write> Update(const api::KindInfo& kind, const StoredObject& current, api::Object requested,
                     Subresource subresource);
// A delete: preconditions, then a deletionTimestamp while finalizers remain (nothing when it is
// already set), else removal. Orphaning dependents is the backend's (it knows the index).
Result<Write> Delete(const api::KindInfo& kind, const StoredObject& current,
                     const Preconditions& preconditions, base::WallTime now);
// A dependent with its references to `owner_uid` removed (orphan propagation).
Write Orphan(const StoredObject& dependent, std::string_view owner_uid);
// The garbage collector's decision for a dependent, given which of its owners still exist:
// all gone → delete it (finalizers honoured); some gone → drop those references; else nothing.
Result<Write> Collect(const api::KindInfo& kind, const StoredObject& dependent,
                      const std::set<std::string>& live_owner_uids, base::WallTime now);

}  // namespace rules
}  // namespace warren::store
