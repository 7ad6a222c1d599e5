#pragma once

#include "base/status.h"
#include "store/sqlite/db.h"

namespace warren::store::sqlite {

// Tables (created when missing):
//   meta(key, value)            'revision': last committed revision; 'compacted': history
//                               before it is gone; 'schema': the layout version.
//   events(rv, type, kind, namespace, name, prev_rv, ts, doc)
//                               every change, holding the full object after it (the last state
//                               for a deletion); prev_rv links to the key's previous change.
//                               This is the object history: watches replay it, continue tokens
//                               read it, and the current document of an object is its latest
//                               event (never compacted while the object exists).
//   objects(kind, namespace, name, uid, rv)
//                               the live objects, pointing at their latest event.
//   owner_refs(owner_uid, kind, namespace, name)
//                               who names whom in ownerReferences, for garbage collection.
inline constexpr int kSchemaVersion = 1;

// Event types as stored.
inline constexpr int kStoredAdded = 0;
inline constexpr int kStoredModified = 1;
inline constexpr int kStoredDeleted = 2;

// Creates the tables and checks the schema version.
Status CreateSchema(Connection& conn);

}  // namespace warren::store::sqlite
