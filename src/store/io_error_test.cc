// A write the disk refuses. The soak's fault matrix (bench/soak, "store-ro") made the store's
// files immutable for 5 s; every write failed with SQLite's disk I/O error and the E2B API
// answered 500, which no client retries. Nothing was written, so the write may simply be
// tried again: it is Unavailable (503), and the store writes again once the disk does.

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include "api/kinds.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::store {
namespace {

using testing::MakeSandbox;
using testing::TempStore;

// While alive, every write(2) that would grow a regular file fails with EFBIG, as writes fail
// with EIO on a failing disk or EPERM on an immutable file (both need root or a real fault to
// make; this needs neither). Process-wide: the test holds it only around one call.
class FileSizeLimitZero {
 public:
  FileSizeLimitZero() {
    old_signal_ = signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit zero = old_;
    zero.rlim_cur = 0;
    setrlimit(RLIMIT_FSIZE, &zero);
  }
  ~FileSizeLimitZero() {
    setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_signal_);
  }
  FileSizeLimitZero(const FileSizeLimitZero&) = delete;
  FileSizeLimitZero& operator=(const FileSizeLimitZero&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_signal_ = SIG_DFL;
};

TEST(StoreIoError, AWriteTheDiskRefusesIsUnavailableNothingIsWrittenAndTheStoreRecovers) {
  TempStore store;
  ASSERT_TRUE(store->Create(MakeSandbox("before")).ok());
  Status refused;
  {
    FileSizeLimitZero limit;
    refused = store->Create(MakeSandbox("during")).status();
  }
  EXPECT_EQ(refused.code(), StatusCode::kUnavailable) << refused;
  EXPECT_NE(refused.message().find("disk I/O error"), std::string::npos) << refused;
  EXPECT_EQ(store->Get(api::SandboxKind(), "default", "during").status().code(),
            StatusCode::kNotFound);
  auto after = store->Create(MakeSandbox("after"));
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_TRUE(store->Get(api::SandboxKind(), "default", "before").ok());
  store.Reopen();
  EXPECT_TRUE(store->Get(api::SandboxKind(), "default", "after").ok());
}

}  // namespace
}  // namespace warren::store
