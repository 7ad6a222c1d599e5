#include "server/e2b/volume_files.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "base/testing/temp_dir.h"

namespace warren::server::e2b {
namespace {

// A volume's directory holding what a hostile sandbox could have planted, beside a host file
// it must never reach.
class VolumeFilesTest : public ::testing::Test {
 protected:
  VolumeFilesTest() {
    root_ = dir_.path() + "/volume";
    secret_ = dir_.path() + "/host-secret";
    mkdir(root_.c_str(), 0777);
    std::ofstream(secret_) << "host only";
    EXPECT_EQ(symlink(secret_.c_str(), (root_ + "/secret").c_str()), 0);
    EXPECT_EQ(symlink(dir_.path().c_str(), (root_ + "/out").c_str()), 0);
    EXPECT_EQ(mkfifo((root_ + "/fifo").c_str(), 0666), 0);
  }

  VolumeFiles Files(uint32_t offset = 0) {
    auto f = VolumeFiles::Open(root_, offset);
    EXPECT_TRUE(f.ok()) << f.status().ToString();
    return std::move(*f);
  }

  base::testing::TempDir dir_;
  std::string root_;
  std::string secret_;
};

TEST_F(VolumeFilesTest, WritesReadsListsAndRemovesBeneathTheRoot) {
  VolumeFiles files = Files();
  auto w = files.Write("/a/b/c.txt", "data", {});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->path, "/a/b/c.txt");
  EXPECT_EQ(w->type, "file");
  EXPECT_EQ(w->size, 4);
  EXPECT_EQ(w->mode, 0644u);
  EXPECT_EQ(*files.Read("a/b/c.txt", 100), "data");
  ASSERT_TRUE(files.Write("/a/b/c.txt", "replaced", {}).ok());
  EXPECT_EQ(*files.Read("/a/b/c.txt", 100), "replaced");
  EXPECT_EQ(files.Read("/a/b/c.txt", 3).status().code(), StatusCode::kResourceExhausted);

  auto listed = files.List("/", 3);
  ASSERT_TRUE(listed.ok());
  std::vector<std::string> paths;
  for (const auto& e : *listed) paths.push_back(e.path + ":" + e.type);
  EXPECT_EQ(paths, (std::vector<std::string>{"/a:directory", "/a/b:directory", "/a/b/c.txt:file",
                                             "/fifo:unknown", "/out:symlink", "/secret:symlink"}));
  auto shallow = files.List("", 1);
  ASSERT_TRUE(shallow.ok());
  EXPECT_EQ(shallow->size(), 4u);

  EXPECT_EQ(files.MakeDir("/a", {}, false).status().code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(files.MakeDir("/a", {}, true).ok());
  EXPECT_EQ(files.MakeDir("/x/y", {}, false).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(files.MakeDir("/x/y", {}, true).ok());

  ASSERT_TRUE(files.Remove("/a").ok());
  EXPECT_EQ(files.Stat("/a").status().code(), StatusCode::kNotFound);
  EXPECT_FALSE(files.Remove("/").ok());
}

TEST_F(VolumeFilesTest, NothingPlantedLeadsOutOrBlocks) {
  VolumeFiles files = Files();
  auto link = files.Stat("/secret");
  ASSERT_TRUE(link.ok());
  EXPECT_EQ(link->type, "symlink");
  EXPECT_EQ(link->target, secret_);
  EXPECT_EQ(files.Read("/secret", 100).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(files.Read("/out/host-secret", 100).ok());
  EXPECT_FALSE(files.Write("/out/planted", "x", {}).ok());
  EXPECT_FALSE(files.MakeDir("/out/dir", {}, true).ok());
  EXPECT_FALSE(files.SetMetadata("/secret", {.mode = 0777}).ok());
  EXPECT_FALSE(files.List("/out", 1).ok());
  EXPECT_EQ(files.Read("/fifo", 100).status().code(), StatusCode::kFailedPrecondition)
      << "opened without blocking, refused as not a regular file";
  for (const char* bad : {"../host-secret", "/a/../../host-secret", "/.."}) {
    EXPECT_EQ(files.Read(bad, 100).status().code(), StatusCode::kInvalidArgument) << bad;
  }
  // Removing a link removes the link.
  ASSERT_TRUE(files.Remove("/out").ok());
  struct stat st;
  EXPECT_EQ(stat(secret_.c_str(), &st), 0);
  EXPECT_EQ(stat(dir_.path().c_str(), &st), 0);
  std::ifstream in(secret_);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "host only");
  EXPECT_EQ(access((dir_.path() + "/planted").c_str(), F_OK), -1);
}

TEST_F(VolumeFilesTest, IdsAreTheSandboxesAndUnmappedOnesShowAsNobody) {
  if (geteuid() != 0) GTEST_SKIP() << "chown to other ids needs root";
  VolumeFiles files = Files(1'000'000'000);
  auto w = files.Write("/mine", "x", {.uid = 1000, .gid = 1000, .mode = 0600});
  ASSERT_TRUE(w.ok()) << w.status().ToString();
  EXPECT_EQ(w->uid, 1000u);
  EXPECT_EQ(w->mode, 0600u);
  struct stat st;
  ASSERT_EQ(stat((root_ + "/mine").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1'000'001'000u) << "the host id behind the sandbox's 1000";
  auto host_owned = files.Stat("/fifo");  // made by the test as host root: not mapped
  ASSERT_TRUE(host_owned.ok());
  EXPECT_EQ(host_owned->uid, 65534u);
  auto changed = files.SetMetadata("/mine", {.uid = 0});
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(changed->uid, 0u);
  EXPECT_EQ(changed->gid, 1000u);
}

}  // namespace
}  // namespace warren::server::e2b
