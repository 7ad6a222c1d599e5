#include "store/sqlite/schema.h"

#include <fmt/format.h>

namespace warren::store::sqlite {

Status CreateSchema(Connection& conn) {
  RETURN_IF_ERROR(conn.Exec(R"sql(
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
INSERT OR IGNORE INTO meta(key, value) VALUES('revision', 0), ('compacted', 0), ('schema', 1);
CREATE TABLE IF NOT EXISTS events(
  rv INTEGER PRIMARY KEY,
  type INTEGER NOT NULL,
  kind TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  prev_rv INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  doc TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_key ON events(kind, namespace, name, rv);
CREATE TABLE IF NOT EXISTS objects(
  kind TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  uid TEXT NOT NULL,
  rv INTEGER NOT NULL,
  PRIMARY KEY(kind, namespace, name)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS objects_by_uid ON objects(uid);
CREATE TABLE IF NOT EXISTS owner_refs(
  owner_uid TEXT NOT NULL,
  kind TEXT NOT NULL,
  namespace TEXT NOT NULL,
  name TEXT NOT NULL,
  PRIMARY KEY(owner_uid, kind, namespace, name)) WITHOUT ROWID;
COMMIT;
)sql"));
  ASSIGN_OR_RETURN(int64_t version, conn.QueryInt("SELECT value FROM meta WHERE key = 'schema'"));
  if (version != kSchemaVersion) {
    return FailedPreconditionError(
        fmt::format("store schema version {} is not the version this build understands ({})",
                    version, kSchemaVersion));
  }
  return Status::Ok();
}

}  // namespace warren::store::sqlite
