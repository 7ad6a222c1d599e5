#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "api/kinds.h"
#include "base/clock.h"
#include "base/result.h"
#include "store/store.h"

namespace warren::store {

struct SqliteStoreOptions {
  std::string path;  // the database file; created when missing (with -wal and -shm beside it)

  // SQLite's synchronous setting for the write-ahead log. Both keep every acknowledged write
  // when the process is killed (a committed transaction is already in the OS page cache; the
  // crash test checks it) and both keep the database consistent. kFull also keeps every
  // acknowledged write through a power loss, by fsyncing the WAL on each commit; kNormal can lose
  // the writes since the last checkpoint (the background checkpointer syncs the WAL at least once
  // a second while there are writes). Warren defaults to kNormal: on the shared VM disks it runs
  // on, an fsync per commit costs a CAS-update p99 of ~100 ms under load against the claim path's
  // 5 ms budget (bench/store/README.md); use kFull on disks with fast, power-safe fsync.
  enum class Sync { kFull, kNormal };
  Sync sync = Sync::kNormal;

  // How long committed changes stay replayable by watches and continue tokens; older ones are
  // compacted away (a watch from before that → OutOfRange/410).
  std::chrono::seconds history{300};
  size_t max_batch = 512;                 // writes committed in one transaction at most
  size_t max_object_bytes = 1536 * 1024;  // like etcd's default request limit
  int reader_connections = 4;
  // Parsed objects of recent revisions kept to skip reading and parsing their JSON again
  // (sqlite/object_cache.h); they share memory with the watch events that carried them.
  // 0 turns the cache off.
  size_t object_cache_entries = 4096;
  base::Clock* clock = nullptr;  // nullptr = base::RealClock()
};

// The SQLite backend: WAL mode; one writer thread that batches concurrent writes into one
// transaction (group commit) with a single global revision counter; readers on a pool of
// connections; watches served from an in-process hub backed by the events table; a garbage
// collector thread for owner references; WAL checkpoints on a background thread so commits do
// not pay for them. Thread-safe.
class SqliteStore : public Store {
 public:
  // Opens (or creates) the database, recovers the revision, and starts the threads. Leftover
  // dependents of owners deleted before a crash are queued for garbage collection.
  static Result<std::unique_ptr<SqliteStore>> Open(
      SqliteStoreOptions options, const api::KindRegistry& kinds = api::BuiltinKinds());

  // Drops history older than options.history now (it also happens in the background).
  virtual Status Compact() = 0;
  // The oldest revision watches can still resume from.
  virtual int64_t CompactedRevision() = 0;
  // Blocks until the garbage collector has nothing queued (tests, shutdown).
  virtual void WaitForGarbageCollection() = 0;
};

}  // namespace warren::store
