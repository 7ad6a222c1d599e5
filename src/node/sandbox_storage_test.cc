#include "node/sandbox_storage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "store/testing/temp_store.h"

namespace warren::node {
namespace {

constexpr int64_t kGi = int64_t{1} << 30;

TEST(SandboxStorage, TheHostKeepsTheLargerOfItsShareAndTheMinimum) {
  StorageOptions o;  // 10%, at least 1Gi
  EXPECT_EQ(HostReserveBytes({250 * kGi, 75 * kGi}, o), 25 * kGi);
  EXPECT_EQ(HostReserveBytes({5 * kGi, 4 * kGi}, o), kGi);
}

TEST(SandboxStorage, TheImageIsTheFreeSpaceBeyondTheReserveOrLessWhenAsked) {
  StorageOptions o;
  EXPECT_EQ(*StorageImageBytes({250 * kGi, 75 * kGi}, o), 50 * kGi);
  o.image_bytes = 20 * kGi;
  EXPECT_EQ(*StorageImageBytes({250 * kGi, 75 * kGi}, o), 20 * kGi);
  o.image_bytes = 500 * kGi;  // never into the host's reserve
  EXPECT_EQ(*StorageImageBytes({250 * kGi, 75 * kGi}, o), 50 * kGi);
}

TEST(SandboxStorage, NoImageWhenTooLittleIsLeftBeyondTheReserve) {
  StorageOptions o;
  auto size = StorageImageBytes({250 * kGi, 25 * kGi + kGi / 2}, o);
  ASSERT_FALSE(size.ok());
  EXPECT_EQ(size.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(size.status().message(),
            "the data dir's file system has 25.5Gi free and the host keeps 25.0Gi of it, leaving "
            "512Mi for sandboxes (at least 1.0Gi needed)");
}

TEST(SandboxStorage, DiskPressureBelowTheReserve) {
  StorageOptions o;
  EXPECT_FALSE(DiskPressure({250 * kGi, 26 * kGi}, o));
  auto pressure = DiskPressure({250 * kGi, 24 * kGi}, o);
  ASSERT_TRUE(pressure);
  EXPECT_EQ(*pressure,
            "the data dir's file system has 24.0Gi free, below the 25.0Gi kept for the host; no "
            "sandbox starts until space is freed");
}

TEST(SandboxStorage, TurnedOffItIsPlainDirectoriesAndSaysWhy) {
  store::testing::TempDir dir;
  StorageOptions o;
  o.enforce = false;
  auto storage = SandboxStorage::Open(dir.path(), o);
  EXPECT_FALSE(storage->enforced());
  EXPECT_EQ(storage->reason(), "turned off (WARREN_NODE_STORAGE=off)");
  EXPECT_EQ(storage->capacity_bytes(), 0);
  const std::string sandbox = dir.path() + "/sandboxes/i1";
  ASSERT_TRUE(storage->MakeSandboxDir(sandbox, kGi).ok());
  EXPECT_EQ(access(sandbox.c_str(), F_OK), 0);
  ASSERT_TRUE(storage->RemoveSandboxDir(sandbox).ok());
  EXPECT_NE(access(sandbox.c_str(), F_OK), 0);
  EXPECT_TRUE(storage->RemoveSandboxDir(sandbox).ok()) << "removing what is gone is fine";
}

}  // namespace
}  // namespace warren::node
