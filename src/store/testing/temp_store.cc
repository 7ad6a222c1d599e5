#include "store/testing/temp_store.h"

#include <cstdlib>
#include <filesystem>

#include "base/check.h"

namespace warren::store::testing {

TempStore::TempStore(SqliteStoreOptions options) : options_(std::move(options)) {
  options_.path = dir_.path() + "/store.db";
  Reopen();
}

TempStore::~TempStore() { store_.reset(); }

void TempStore::Close() { store_.reset(); }

void TempStore::Reopen() {
  store_.reset();
  auto opened = SqliteStore::Open(options_);
  CHECK_MSG(opened.ok(), opened.status().ToString());
  store_ = std::move(*opened);
}

}  // namespace warren::store::testing
