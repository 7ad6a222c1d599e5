#pragma once

#include <memory>
#include <string>

#include "base/testing/temp_dir.h"
#include "store/sqlite_store.h"

namespace warren::store::testing {

using TempDir = base::testing::TempDir;

// A real SQLite store in a temporary directory, for tests of anything that needs a store.
// CHECK-fails if the store cannot be opened (a broken test environment, not a test result).
// Not thread-safe itself; the store it holds is.
class TempStore {
 public:
  explicit TempStore(SqliteStoreOptions options = {});
  ~TempStore();

  SqliteStore& store() { return *store_; }
  SqliteStore* operator->() { return store_.get(); }
  const std::string& db_path() const { return options_.path; }

  // Closes the store and opens the same database again (as after a restart).
  void Reopen();
  // Closes the store (e.g. to inspect the file directly); Reopen() opens it again.
  void Close();

 private:
  TempDir dir_;
  SqliteStoreOptions options_;
  std::unique_ptr<SqliteStore> store_;
};

}  // namespace warren::store::testing
