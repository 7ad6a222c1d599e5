#include "runtime/native/dir_tree.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

#include "base/small_file.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren::runtime::native {
namespace {

bool Exists(const std::string& p) {
  struct stat st;
  return lstat(p.c_str(), &st) == 0;
}

TEST(DirTreeTest, RemovesATreeWithoutFollowingSymlinksOut) {
  testing::TempDir tmp("dirtree");
  std::string outside = tmp.path() + "/outside";
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  ASSERT_TRUE(base::WriteFileAtomically(outside + "/precious", "keep").ok());
  std::string tree = tmp.path() + "/tree";
  ASSERT_EQ(mkdir(tree.c_str(), 0755), 0);
  ASSERT_EQ(mkdir((tree + "/a").c_str(), 0755), 0);
  ASSERT_EQ(mkdir((tree + "/a/b").c_str(), 0700), 0);
  ASSERT_TRUE(base::WriteFileAtomically(tree + "/a/b/file", "x").ok());
  ASSERT_EQ(symlink(outside.c_str(), (tree + "/a/link-to-outside").c_str()), 0);
  ASSERT_EQ(symlink("/", (tree + "/root-link").c_str()), 0);
  ASSERT_EQ(mkfifo((tree + "/a/fifo").c_str(), 0600), 0);
  ASSERT_TRUE(RemoveTree(tree).ok());
  EXPECT_FALSE(Exists(tree));
  EXPECT_TRUE(Exists(outside + "/precious")) << "a symlink was followed";
  EXPECT_TRUE(RemoveTree(tree).ok()) << "a missing tree is not an error";
}

TEST(DirTreeTest, RemovesTreesDeeperThanItHoldsOpen) {
  testing::TempDir tmp("deeptree");
  std::string tree = tmp.path() + "/deep";
  ASSERT_EQ(mkdir(tree.c_str(), 0755), 0);
  int fd = open(tree.c_str(), O_DIRECTORY | O_RDONLY);
  ASSERT_GE(fd, 0);
  // 1000 levels: deeper than PATH_MAX allows naming from the top.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_EQ(mkdirat(fd, "dddddddd", 0755), 0);
    int next = openat(fd, "dddddddd", O_DIRECTORY | O_RDONLY);
    ASSERT_GE(next, 0);
    if (i % 100 == 0) {
      int f = openat(next, "f", O_CREAT | O_WRONLY, 0644);
      close(f);
    }
    close(fd);
    fd = next;
  }
  close(fd);
  auto usage = DiskUsage(tree);
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GT(*usage, 0u);
  ASSERT_TRUE(RemoveTree(tree).ok());
  EXPECT_FALSE(Exists(tree));
}

TEST(DirTreeTest, DiskUsageCountsAllocatedBytes) {
  testing::TempDir tmp("usage");
  std::string big(1 << 20, 'x');
  ASSERT_TRUE(base::WriteFileAtomically(tmp.path() + "/big", big).ok());
  ASSERT_EQ(mkdir((tmp.path() + "/sub").c_str(), 0755), 0);
  ASSERT_TRUE(base::WriteFileAtomically(tmp.path() + "/sub/small", "y").ok());
  auto usage = DiskUsage(tmp.path());
  ASSERT_TRUE(usage.ok());
  EXPECT_GE(*usage, uint64_t{1} << 20);
  EXPECT_LT(*usage, uint64_t{2} << 20);
  EXPECT_EQ(DiskUsage(tmp.path() + "/missing").status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace warren::runtime::native
