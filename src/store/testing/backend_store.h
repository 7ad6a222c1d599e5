#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "base/clock.h"
#include "base/testing/temp_dir.h"
#include "store/etcd_store.h"
#include "store/sqlite_store.h"
#include "store/testing/etcd_process.h"

namespace warren::store::testing {

enum class Backend { kSqlite, kEtcd };
// "sqlite", "etcd": for test names.
std::string BackendName(Backend backend);

struct BackendStoreOptions {
  base::Clock* clock = nullptr;  // nullptr = the real clock
  std::chrono::seconds history{300};
  // etcd's data on disk (the temp dir) instead of tmpfs, so its fsyncs count (benchmarks).
  bool etcd_on_disk = false;
};

// A real store of either backend for the store's own tests, which run against both: SQLite in a
// temporary directory, or etcd started for this store alone (EtcdCluster, one member), so the
// revisions a test sees are its own. Reopen closes the store and opens it again on the same data
// (as after a restart of the server). CHECK-fails when the store cannot be opened. Not
// thread-safe itself; the store it holds is.
class BackendStore {
 public:
  explicit BackendStore(Backend backend, BackendStoreOptions options = {});
  ~BackendStore();

  Store& store() { return *store_; }
  Store* operator->() { return store_.get(); }
  Backend backend() const { return backend_; }
  // The etcd behind an etcd store (nullptr for SQLite).
  EtcdCluster* etcd() { return etcd_.get(); }
  // The database file of a SQLite store.
  std::string db_path() const { return dir_.path() + "/store.db"; }

  void Reopen();
  void Close();
  // The maintenance both backends have (SqliteStore's and EtcdStore's).
  Status Compact();
  int64_t CompactedRevision();
  void WaitForGarbageCollection();

 private:
  Backend backend_;
  BackendStoreOptions options_;
  base::testing::TempDir dir_;
  std::unique_ptr<EtcdCluster> etcd_;
  std::unique_ptr<Store> store_;
  SqliteStore* sqlite_ = nullptr;    // store_ when it is SQLite
  EtcdStore* etcd_store_ = nullptr;  // store_ when it is etcd
};

}  // namespace warren::store::testing
