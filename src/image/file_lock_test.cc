#include "image/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using ::warren::image::testing::TempDir;

TEST(FileLockTest, ExcludesAcrossThreadsAndRemovesItsFile) {
  TempDir tmp;
  std::string path = tmp.Sub("x.lock");
  auto first = FileLock::Acquire(path, /*remove_on_release=*/true);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(FileLock::TryAcquire(path).status().code(), StatusCode::kUnavailable);

  std::atomic<bool> second_held{false};
  std::thread waiter([&] {
    auto second = FileLock::Acquire(path, /*remove_on_release=*/true);
    ASSERT_TRUE(second.ok());
    second_held = true;
    // The first holder unlinked the file; the waiter locked the one that is there now.
    EXPECT_TRUE(std::filesystem::exists(path));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(second_held.load());
  first->Release();
  waiter.join();
  EXPECT_TRUE(second_held.load());
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(FileLockTest, AKeptLockFileStays) {
  TempDir tmp;
  std::string path = tmp.Sub("store.lock");
  { auto lock = FileLock::Acquire(path); }
  EXPECT_TRUE(std::filesystem::exists(path));
  EXPECT_TRUE(FileLock::TryAcquire(path).ok());
}

}  // namespace
}  // namespace warren::image
