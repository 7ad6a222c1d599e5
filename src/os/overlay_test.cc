// MountOverlayRaw's volatile mode on real mounts (root): the kernel keeps the workdir of a
// volatile mount from being mounted again until ClearVolatileMarker, which removes only what it
// knows; the upper layer's files survive both.
#include "os/overlay.h"

#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "base/testing/status_macros.h"
#include "base/testing/temp_dir.h"
#include "os/mount.h"

namespace warren::os {
namespace {

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "mounting needs root";
    for (const char* d : {"/lower", "/upper", "/work", "/root"}) {
      ASSERT_EQ(mkdir((tmp_.path() + d).c_str(), 0755), 0) << d;
    }
    layers_.lower_top_first = {tmp_.path() + "/lower"};
    layers_.upper = tmp_.path() + "/upper";
    layers_.work = tmp_.path() + "/work";
    layers_.volatile_upper = true;
    target_ = tmp_.path() + "/root";
  }
  void TearDown() override {
    if (!target_.empty()) umount2(target_.c_str(), MNT_DETACH);
  }
  // 0 when mounted (and the mount's fd closed), else -errno.
  int Mount() {
    int fd = MountOverlayRaw(layers_, target_.c_str());
    if (fd < 0) return fd;
    close(fd);
    return 0;
  }
  std::string MountOptions() {
    auto mounts = ReadMountInfo();
    if (!mounts.ok()) return "";
    for (const MountEntry& m : *mounts) {
      if (m.mount_point == target_) return m.super_options;
    }
    return "";
  }

  base::testing::TempDir tmp_;
  OverlayLayers layers_;
  std::string target_;
};

TEST_F(OverlayTest, AVolatileWorkdirMountsAgainOnlyOnceItsMarkerIsCleared) {
  ASSERT_EQ(Mount(), 0);
  EXPECT_NE(MountOptions().find("volatile"), std::string::npos) << MountOptions();
  std::ofstream(target_ + "/kept") << "written under a volatile mount";
  ASSERT_EQ(umount2(target_.c_str(), 0), 0);

  // What the kernel does (and why the runtime clears the marker before each start).
  EXPECT_LT(Mount(), 0) << "the kernel mounted a volatile workdir again";
  ASSERT_OK(ClearVolatileMarker(layers_.work));
  ASSERT_EQ(Mount(), 0);
  std::stringstream text;
  text << std::ifstream(target_ + "/kept").rdbuf();
  EXPECT_EQ(text.str(), "written under a volatile mount");
  ASSERT_EQ(umount2(target_.c_str(), 0), 0);
  ASSERT_OK(SyncUpper(layers_.upper));
}

TEST_F(OverlayTest, ClearingAWorkdirWithoutAMarkerDoesNothing) {
  ASSERT_OK(ClearVolatileMarker(layers_.work));
  ASSERT_OK(ClearVolatileMarker(tmp_.path() + "/no-such-workdir"));
  layers_.volatile_upper = false;
  ASSERT_EQ(Mount(), 0);
  EXPECT_EQ(MountOptions().find("volatile"), std::string::npos) << MountOptions();
}

TEST_F(OverlayTest, AnUnknownIncompatFeatureIsLeftAndNamed) {
  ASSERT_EQ(Mount(), 0);
  ASSERT_EQ(umount2(target_.c_str(), 0), 0);
  const std::string other = layers_.work + "/work/incompat/some-future-feature";
  ASSERT_EQ(mkdir(other.c_str(), 0755), 0);
  Status st = ClearVolatileMarker(layers_.work);
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_NE(st.message().find("/work/incompat"), std::string::npos) << st;
  struct stat s;
  EXPECT_EQ(stat(other.c_str(), &s), 0) << "the unknown marker was removed";
}

TEST_F(OverlayTest, SyncUpperNamesAMissingLayer) {
  Status st = SyncUpper(tmp_.path() + "/gone");
  EXPECT_EQ(st.code(), StatusCode::kNotFound) << st;
  EXPECT_NE(st.message().find("/gone"), std::string::npos) << st;
}

}  // namespace
}  // namespace warren::os
