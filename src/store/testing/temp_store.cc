#include "store/testing/temp_store.h"

#include <cstdlib>
#include <filesystem>

#include "base/check.h"

namespace warren::store::testing {

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/warren-test-XXXXXX";
  CHECK_MSG(mkdtemp(templ.data()) != nullptr, "mkdtemp " << templ);
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

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
