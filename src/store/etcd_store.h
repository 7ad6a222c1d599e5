#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/kinds.h"
#include "base/clock.h"
#include "base/result.h"
#include "store/store.h"

namespace warren::store {

struct EtcdStoreOptions {
  std::vector<std::string> endpoints;  // "host:port" of each member, tried in turn
  std::string prefix = "/warren";      // every key lives under it; no trailing slash

  // History kept for watches and continue tokens: this store compacts etcd at the revision it
  // committed `history` ago, every `compaction_interval`. Zero leaves compaction to etcd's own
  // --auto-compaction-* settings.
  std::chrono::seconds history{300};
  std::chrono::seconds compaction_interval{300};
  size_t max_object_bytes = 1536 * 1024;  // as SQLite's; etcd's --max-request-bytes must allow it
  std::chrono::milliseconds request_timeout{15000};  // one call, over every member
  base::Clock* clock = nullptr;                      // nullptr = base::RealClock()
};

// Parses "etcd://host:port[,host:port...][/prefix]" into endpoints and prefix (default
// "/warren"). InvalidArgument with the reason otherwise.
Result<EtcdStoreOptions> ParseEtcdUrl(std::string_view url);

// The Store on etcd's v3 JSON gateway. An object is one key,
// <prefix>/<group>/<plural>/[<namespace>/]<name>, holding its JSON; its resourceVersion is the
// key's mod_revision, so the store's revision is etcd's. Creates are a transaction on
// create_revision == 0, other writes a compare-and-swap on the mod_revision they read (retried
// only when the caller set no resourceVersion). Two index families kept in the same transactions
// serve garbage collection: <prefix>/_uids/<uid> and <prefix>/_owners/<owner uid>/<object key>.
// Lists range at one revision (continue tokens carry it); watches are served by a WatchHub fed
// by one etcd watch of the whole prefix, resumed on another member when one goes away.
// Thread-safe.
class EtcdStore : public Store {
 public:
  // Connects (one call must succeed) and starts the garbage collector, which first looks for
  // dependents whose owners vanished while no store ran.
  static Result<std::unique_ptr<EtcdStore>> Open(
      EtcdStoreOptions options, const api::KindRegistry& kinds = api::BuiltinKinds());

  // Compacts etcd at the newest revision this store committed before the history window (the
  // background compactor does the same).
  virtual Status Compact() = 0;
  // The newest revision this store knows to be compacted (its own compactions and those watches
  // reported).
  virtual int64_t CompactedRevision() = 0;
  // Blocks until the garbage collector has nothing queued (tests, shutdown).
  virtual void WaitForGarbageCollection() = 0;
};

}  // namespace warren::store
