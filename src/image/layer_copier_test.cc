#include "image/layer_copier.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "base/unique_fd.h"
#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using ::warren::image::testing::ReadFile;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

constexpr uint32_t kShift = 1'000'000'000;

std::string Xattr(const std::string& path, const char* name) {
  char value[64];
  ssize_t n = lgetxattr(path.c_str(), name, value, sizeof(value));
  return n < 0 ? std::string() : std::string(value, static_cast<size_t>(n));
}

// A writable layer as a user-namespaced sandbox leaves it (host ids shifted by kShift, overlay's
// user.overlay.* attributes), copied as a snapshot takes it. Root only: owners, devices and
// trusted.* need it.
class CopyLayerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root";
    std::filesystem::create_directories(Upper());
  }

  std::string Upper() const { return tmp_.Sub("upper"); }

  Result<CopiedLayer> Copy(const std::string& into) {
    std::filesystem::create_directories(into);
    base::UniqueFd src(open(Upper().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    base::UniqueFd dst(open(into.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    CopyLayerOptions options;
    options.id_shift = kShift;
    options.id_count = 65536;
    return CopyWritableLayer(src.get(), dst.get(), options);
  }

  void MakeSandboxTree() {
    const std::string u = Upper();
    ASSERT_EQ(chown(u.c_str(), kShift, kShift), 0);
    std::filesystem::create_directories(u + "/home/user/work");
    WriteFile(u + "/home/user/a.txt", "from the sandbox");
    ASSERT_EQ(chown((u + "/home/user/a.txt").c_str(), kShift + 1000, kShift + 1000), 0);
    ASSERT_EQ(chmod((u + "/home/user/a.txt").c_str(), 04750), 0);
    ASSERT_EQ(link((u + "/home/user/a.txt").c_str(), (u + "/home/user/b.txt").c_str()), 0);
    ASSERT_EQ(symlink("/etc/shadow", (u + "/home/user/link").c_str()), 0);
    ASSERT_EQ(mknod((u + "/home/user/gone").c_str(), S_IFCHR | 0, makedev(0, 0)), 0);
    ASSERT_EQ(mkfifo((u + "/home/user/fifo").c_str(), 0600), 0);
    ASSERT_EQ(setxattr((u + "/home/user/work").c_str(), "user.overlay.opaque", "y", 1, 0), 0);
    ASSERT_EQ(setxattr((u + "/home/user/work").c_str(), "user.overlay.origin", "xx", 2, 0), 0);
    ASSERT_EQ(setxattr((u + "/home/user/a.txt").c_str(), "user.note", "kept", 4, 0), 0);
    // A file owned by an id the sandbox could not have mapped.
    WriteFile(u + "/home/user/odd", "x");
    ASSERT_EQ(chown((u + "/home/user/odd").c_str(), 7, 7), 0);
  }

  TempDir tmp_;
};

TEST_F(CopyLayerTest, CopiesWhatTheSandboxSawWithItsOwnIdsAndOverlayMarkers) {
  MakeSandboxTree();
  const std::string out = tmp_.Sub("layer");
  auto copied = Copy(out);
  ASSERT_TRUE(copied.ok()) << copied.status().ToString();

  struct stat st;
  ASSERT_EQ(lstat((out + "/home/user/a.txt").c_str(), &st), 0);
  EXPECT_EQ(ReadFile(out + "/home/user/a.txt"), "from the sandbox");
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_mode & 07777, 04750u) << "setuid survives the chown";
  EXPECT_EQ(Xattr(out + "/home/user/a.txt", "user.note"), "kept");
  struct stat linked;
  ASSERT_EQ(lstat((out + "/home/user/b.txt").c_str(), &linked), 0);
  EXPECT_EQ(linked.st_ino, st.st_ino) << "a hard link stays one file";
  ASSERT_EQ(lstat(out.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u) << "the layer root is the sandbox's root";

  char target[64] = {};
  ASSERT_GT(readlink((out + "/home/user/link").c_str(), target, sizeof(target) - 1), 0);
  EXPECT_STREQ(target, "/etc/shadow") << "copied as a link, never followed";

  ASSERT_EQ(lstat((out + "/home/user/gone").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0)) << "the whiteout stays";
  ASSERT_EQ(lstat((out + "/home/user/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  EXPECT_EQ(Xattr(out + "/home/user/work", "trusted.overlay.opaque"), "y");
  EXPECT_EQ(Xattr(out + "/home/user/work", "user.overlay.opaque"), "y");
  EXPECT_EQ(Xattr(out + "/home/user/work", "user.overlay.origin"), "")
      << "the source mount's own markers are dropped";

  ASSERT_EQ(lstat((out + "/home/user/odd").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);
  EXPECT_EQ(copied->bytes, std::string("from the sandbox").size() + 1);
}

TEST_F(CopyLayerTest, EqualTreesHaveEqualDigestsAndAnyChangeShowsInTheDigest) {
  MakeSandboxTree();
  auto first = Copy(tmp_.Sub("one"));
  auto again = Copy(tmp_.Sub("two"));
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->digest, again->digest);

  // Same size, same times, one byte different.
  struct stat st;
  const std::string file = Upper() + "/home/user/a.txt";
  ASSERT_EQ(stat(file.c_str(), &st), 0);
  WriteFile(file, "from the sandboX");
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  ASSERT_EQ(utimensat(AT_FDCWD, file.c_str(), times, 0), 0);
  auto changed = Copy(tmp_.Sub("three"));
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->digest, first->digest);
}

TEST_F(CopyLayerTest, ALayerOverItsLimitsIsRefusedNamingTheLimit) {
  MakeSandboxTree();
  std::filesystem::create_directories(tmp_.Sub("small"));
  base::UniqueFd src(open(Upper().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  base::UniqueFd dst(open(tmp_.Sub("small").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  CopyLayerOptions options;
  options.limits.max_bytes = 4;
  auto copied = CopyWritableLayer(src.get(), dst.get(), options);
  ASSERT_FALSE(copied.ok());
  EXPECT_EQ(copied.status().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(copied.status().message().find("more than 4 bytes"), std::string::npos);
}

}  // namespace
}  // namespace warren::image
