#include "store/testing/backend_store.h"

#include "base/check.h"

namespace warren::store::testing {

std::string BackendName(Backend backend) { return backend == Backend::kSqlite ? "sqlite" : "etcd"; }

BackendStore::BackendStore(Backend backend, BackendStoreOptions options)
    : backend_(backend), options_(options) {
  if (backend_ == Backend::kEtcd) {
    etcd_ = std::make_unique<EtcdCluster>(1, options_.etcd_on_disk ? dir_.path() : "/dev/shm");
  }
  Reopen();
}

BackendStore::~BackendStore() { Close(); }

void BackendStore::Close() {
  store_.reset();
  sqlite_ = nullptr;
  etcd_store_ = nullptr;
}

void BackendStore::Reopen() {
  Close();
  if (backend_ == Backend::kSqlite) {
    SqliteStoreOptions o;
    o.path = db_path();
    o.clock = options_.clock;
    o.history = options_.history;
    auto opened = SqliteStore::Open(o);
    CHECK_MSG(opened.ok(), opened.status().ToString());
    sqlite_ = opened->get();
    store_ = std::move(*opened);
  } else {
    auto o = ParseEtcdUrl(etcd_->Url());
    CHECK_MSG(o.ok(), o.status().ToString());
    o->clock = options_.clock;
    o->history = options_.history;
    auto opened = EtcdStore::Open(*o);
    CHECK_MSG(opened.ok(), opened.status().ToString());
    etcd_store_ = opened->get();
    store_ = std::move(*opened);
  }
}

Status BackendStore::Compact() { return sqlite_ ? sqlite_->Compact() : etcd_store_->Compact(); }

int64_t BackendStore::CompactedRevision() {
  return sqlite_ ? sqlite_->CompactedRevision() : etcd_store_->CompactedRevision();
}

void BackendStore::WaitForGarbageCollection() {
  if (sqlite_) {
    sqlite_->WaitForGarbageCollection();
  } else {
    etcd_store_->WaitForGarbageCollection();
  }
}

}  // namespace warren::store::testing
