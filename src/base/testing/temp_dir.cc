#include "base/testing/temp_dir.h"

#include <cstdlib>
#include <filesystem>

#include "base/check.h"

namespace warren::base::testing {

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

}  // namespace warren::base::testing
