// EnsureMemoryBackedDir on real mounts (root): a directory on a disk filesystem gets exactly one
// tmpfs, however many callers race for it, and one that holds files is left alone.
#include "os/tmpfs.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <latch>
#include <thread>
#include <vector>

#include "base/testing/temp_dir.h"
#include "os/mount.h"

namespace warren::os {
namespace {

using Action = MemoryBackedDir::Action;

long MountsAt(const std::string& dir) {
  auto mounts = ReadMountInfo();
  if (!mounts.ok()) return -1;
  return std::count_if(mounts->begin(), mounts->end(),
                       [&](const MountEntry& m) { return m.mount_point == dir; });
}

// `call` from `n` threads released at once; their results in order.
template <typename F>
auto Race(size_t n, F call) {
  std::vector<decltype(call())> results(n, InternalError("not run"));
  std::vector<std::thread> callers;
  std::latch start(static_cast<std::ptrdiff_t>(n));
  for (size_t i = 0; i < n; ++i) {
    callers.emplace_back([&, i] {
      start.arrive_and_wait();
      results[i] = call();
    });
  }
  for (auto& t : callers) t.join();
  return results;
}

class TmpfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mounting needs root";
    auto probe = EnsureMemoryBackedDir(tmp_.path() + "/probe", 0711, "size=1m");
    ASSERT_TRUE(probe.ok()) << probe.status();
    if (probe->action == Action::kAlready) {
      GTEST_SKIP() << "$TMPDIR is on " << probe->fs << " already: nothing to mount over";
    }
    umount2((tmp_.path() + "/probe").c_str(), MNT_DETACH);
    dir_ = tmp_.path() + "/state";
  }
  void TearDown() override {
    // Every tmpfs stacked on the directory, so none outlives the test.
    while (!dir_.empty() && MountsAt(dir_) > 0 && umount2(dir_.c_str(), MNT_DETACH) == 0) {
    }
  }

  base::testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(TmpfsTest, AnEmptyDirectoryOnDiskGetsOneTmpfsAndKeepsIt) {
  auto first = EnsureMemoryBackedDir(dir_, 0711, "mode=0711,size=1m");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->action, Action::kMounted);
  EXPECT_NE(first->fs, "tmpfs");
  EXPECT_EQ(MountsAt(dir_), 1);
  std::ofstream(dir_ + "/state.json") << "{}";

  auto again = EnsureMemoryBackedDir(dir_, 0711, "mode=0711,size=1m");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->action, Action::kAlready);
  EXPECT_EQ(again->fs, "tmpfs");
  EXPECT_EQ(MountsAt(dir_), 1);
  EXPECT_EQ(access((dir_ + "/state.json").c_str(), F_OK), 0) << "the second call hid the first";
}

TEST_F(TmpfsTest, CallersRacingForOneDirectoryMountOneTmpfs) {
  // Rounds, since one race may well come out right by luck.
  for (int round = 0; round < 20; ++round) {
    auto results = Race(8, [&] { return EnsureMemoryBackedDir(dir_, 0711, "size=1m"); });
    int mounted = 0;
    for (const auto& r : results) {
      ASSERT_TRUE(r.ok()) << r.status();
      mounted += r->action == Action::kMounted;
    }
    ASSERT_EQ(mounted, 1) << "round " << round;
    ASSERT_EQ(MountsAt(dir_), 1) << "round " << round;
    ASSERT_EQ(umount2(dir_.c_str(), MNT_DETACH), 0);
  }
}

TEST_F(TmpfsTest, ADirectoryThatHoldsFilesIsLeftOnDisk) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0711), 0);
  std::ofstream(dir_ + "/i0running") << "{}";
  auto out = EnsureMemoryBackedDir(dir_, 0711, "size=1m");
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->action, Action::kLeftOnDisk);
  EXPECT_NE(out->why.find("i0running"), std::string::npos) << out->why;
  EXPECT_EQ(MountsAt(dir_), 0);
  EXPECT_EQ(access((dir_ + "/i0running").c_str(), F_OK), 0);
}

TEST_F(TmpfsTest, ABadOptionIsAnErrorNamingIt) {
  auto out = EnsureMemoryBackedDir(dir_, 0711, "size=lots");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("size=lots"), std::string::npos) << out.status();
  EXPECT_EQ(MountsAt(dir_), 0);
}

class OwnTmpfsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mounting needs root";
    dir_ = tmp_.path() + "/bin";
  }
  void TearDown() override {
    while (!dir_.empty() && MountsAt(dir_) > 0 && umount2(dir_.c_str(), MNT_DETACH) == 0) {
    }
  }

  base::testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(OwnTmpfsTest, ADirectoryGetsATmpfsOfItsOwnOnceEvenWhenRacedFor) {
  for (int round = 0; round < 10; ++round) {
    auto results = Race(6, [&] { return EnsureOwnTmpfs(dir_, 0755, "mode=0755,size=1m"); });
    int mounted = 0;
    for (const auto& r : results) {
      ASSERT_TRUE(r.ok()) << r.status();
      mounted += *r;
    }
    ASSERT_EQ(mounted, 1) << "round " << round;
    ASSERT_EQ(MountsAt(dir_), 1) << "round " << round;
    std::ofstream(dir_ + "/warren-envd") << "x";
    auto again = EnsureOwnTmpfs(dir_, 0755, "mode=0755,size=1m");
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_FALSE(*again);
    EXPECT_EQ(access((dir_ + "/warren-envd").c_str(), F_OK), 0) << "a second tmpfs hid it";
    ASSERT_EQ(umount2(dir_.c_str(), MNT_DETACH), 0);
  }
}

TEST_F(OwnTmpfsTest, ADirectoryThatHoldsFilesIsRefusedNamingOne) {
  ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  std::ofstream(dir_ + "/left-here") << "x";
  auto out = EnsureOwnTmpfs(dir_, 0755, "size=1m");
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(out.status().message().find("left-here"), std::string::npos) << out.status();
  EXPECT_EQ(MountsAt(dir_), 0);
}

}  // namespace
}  // namespace warren::os
