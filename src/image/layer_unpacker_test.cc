#include "image/layer_unpacker.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>

#include "base/unique_fd.h"
#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using ::testing::HasSubstr;
using ::warren::image::testing::BuildTar;
using ::warren::image::testing::ReadFile;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

// A layer root with a sibling directory standing for "the rest of the host": anything an
// unpack writes there is an escape.
class UnpackTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directories(Root());
    std::filesystem::create_directories(Outside());
    WriteFile(Outside() + "/victim", "original");
    root_fd_ = base::UniqueFd(open(Root().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    ASSERT_TRUE(root_fd_.valid());
  }

  std::string Root() const { return tmp_.Sub("layer"); }
  std::string Outside() const { return tmp_.Sub("outside"); }

  Result<UnpackStats> Unpack(const std::vector<TarEntry>& entries,
                             LayerCompression compression = LayerCompression::kNone) {
    UnpackOptions options;
    options.same_owner = geteuid() == 0;
    return UnpackLayerBytes(BuildTar(entries, compression), root_fd_.get(), options);
  }

  // Everything in the outside directory, which must stay exactly {victim: "original"}.
  void ExpectNothingOutside() {
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(Outside())) {
      names.push_back(e.path().filename().string());
    }
    EXPECT_THAT(names, ::testing::ElementsAre("victim"));
    EXPECT_EQ(ReadFile(Outside() + "/victim"), "original");
    std::vector<std::string> top;
    for (const auto& e : std::filesystem::directory_iterator(tmp_.path())) {
      top.push_back(e.path().filename().string());
    }
    EXPECT_THAT(top, ::testing::UnorderedElementsAre("layer", "outside"));
  }

  TempDir tmp_;
  base::UniqueFd root_fd_;
};

TEST_F(UnpackTest, UnpacksFilesDirsLinksModesAndTimes) {
  TarEntry script = TarEntry::File("usr/bin/tool", "#!/bin/sh\necho hi\n", 04755);
  script.mtime = 1'600'000'000;
  TarEntry ro_dir = TarEntry::Dir("etc/ro", 0555);
  ro_dir.mtime = 1'500'000'000;
  auto stats = Unpack({
      TarEntry::Dir("./"),
      TarEntry::Dir("usr"),
      TarEntry::Dir("usr/bin"),
      script,
      ro_dir,
      TarEntry::File("etc/ro/inside", "x", 0600),
      TarEntry::Symlink("bin", "usr/bin"),
      TarEntry::Symlink("etc/abs", "/etc/passwd"),
      TarEntry::Hardlink("usr/bin/tool2", "usr/bin/tool"),
      TarEntry::File("implicit/parent/file", "made without dir entries"),
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->files, 3u);
  EXPECT_EQ(stats->symlinks, 2u);
  EXPECT_EQ(stats->hardlinks, 1u);

  struct stat st;
  ASSERT_EQ(stat((Root() + "/usr/bin/tool").c_str(), &st), 0);
  // setuid survives only for root (chown by a non-root owner is skipped, chmod keeps the bit).
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  EXPECT_EQ(st.st_mtime, 1'600'000'000);
  EXPECT_EQ(st.st_nlink, 2u);
  EXPECT_EQ(ReadFile(Root() + "/usr/bin/tool2"), "#!/bin/sh\necho hi\n");
  ASSERT_EQ(stat((Root() + "/etc/ro").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  EXPECT_EQ(st.st_mtime, 1'500'000'000);  // Set after its child was written.
  EXPECT_EQ(ReadFile(Root() + "/etc/ro/inside"), "x");
  EXPECT_EQ(std::filesystem::read_symlink(Root() + "/bin"), "usr/bin");
  EXPECT_EQ(std::filesystem::read_symlink(Root() + "/etc/abs"), "/etc/passwd");
  EXPECT_EQ(ReadFile(Root() + "/implicit/parent/file"), "made without dir entries");
  ExpectNothingOutside();
}

TEST_F(UnpackTest, AllThreeCompressionsGiveTheSameTree) {
  for (auto c : {LayerCompression::kNone, LayerCompression::kGzip, LayerCompression::kZstd}) {
    TempDir dir;
    base::UniqueFd fd(open(dir.path().c_str(), O_RDONLY | O_DIRECTORY));
    UnpackOptions options;
    options.same_owner = false;
    auto stats =
        UnpackLayerBytes(BuildTar({TarEntry::File("a/b", "payload")}, c), fd.get(), options);
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(ReadFile(dir.path() + "/a/b"), "payload");
  }
}

TEST_F(UnpackTest, RejectsDotDot) {
  auto stats = Unpack({TarEntry::File("../outside/victim", "pwned")});
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("'../outside/victim' contains '..'"));
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RejectsDotDotInTheMiddle) {
  auto stats = Unpack({TarEntry::Dir("a"), TarEntry::File("a/../../outside/x", "pwned")});
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("contains '..'"));
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RejectsAbsolutePaths) {
  std::string target = Outside() + "/victim";
  auto stats = Unpack({TarEntry::File(target, "pwned")});
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("is absolute"));
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RefusesToWriteThroughASymlinkToADirectoryOutside) {
  auto stats = Unpack({
      TarEntry::Symlink("escape", Outside()),
      TarEntry::File("escape/victim", "pwned"),
  });
  ASSERT_FALSE(stats.ok());
  EXPECT_EQ(stats.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(stats.status().message(), HasSubstr("'escape' passes through a symlink"));
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RefusesARelativeSymlinkClimbingOut) {
  auto stats = Unpack({
      TarEntry::Dir("a"),
      TarEntry::Symlink("a/up", "../../outside"),
      TarEntry::File("a/up/new", "pwned"),
  });
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("passes through a symlink"));
  ExpectNothingOutside();
}

TEST_F(UnpackTest, ReplacesASymlinkInsteadOfWritingThroughIt) {
  // A file entry whose own name is an existing symlink replaces the link, not its target.
  auto stats = Unpack({
      TarEntry::Symlink("link", Outside() + "/victim"),
      TarEntry::File("link", "replaced"),
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_FALSE(std::filesystem::is_symlink(Root() + "/link"));
  EXPECT_EQ(ReadFile(Root() + "/link"), "replaced");
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RefusesHardlinksToOutside) {
  for (const std::string& target : {std::string("../outside/victim"), Outside() + "/victim"}) {
    auto stats = Unpack({TarEntry::Hardlink("stolen", target)});
    ASSERT_FALSE(stats.ok()) << target;
    EXPECT_THAT(stats.status().message(), HasSubstr("hardlink 'stolen'"));
  }
  struct stat st;
  ASSERT_EQ(stat((Outside() + "/victim").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RefusesHardlinksThroughASymlinkedDirectory) {
  auto stats = Unpack({
      TarEntry::Symlink("out", Outside()),
      TarEntry::Hardlink("stolen", "out/victim"),
  });
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("passes through a symlink"));
  struct stat st;
  ASSERT_EQ(stat((Outside() + "/victim").c_str(), &st), 0);
  EXPECT_EQ(st.st_nlink, 1u);
  ExpectNothingOutside();
}

TEST_F(UnpackTest, RefusesHardlinkToAMissingTargetOrADirectory) {
  auto missing = Unpack({TarEntry::Hardlink("a", "nothing")});
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("target is not in the layer"));
  auto dir = Unpack({TarEntry::Dir("d"), TarEntry::Hardlink("b", "d")});
  ASSERT_FALSE(dir.ok());
  EXPECT_THAT(dir.status().message(), HasSubstr("target is a directory"));
}

TEST_F(UnpackTest, RefusesWritingBelowAFile) {
  auto stats = Unpack({TarEntry::File("f", "x"), TarEntry::File("f/child", "y")});
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("passes through a non-directory"));
}

TEST_F(UnpackTest, WhiteoutBecomesACharDeviceZeroZero) {
  auto stats = Unpack({TarEntry::Dir("etc"), TarEntry::Whiteout("etc/gone")});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->whiteouts, 1u);
  struct stat st;
  ASSERT_EQ(lstat((Root() + "/etc/gone").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  EXPECT_FALSE(std::filesystem::exists(Root() + "/etc/.wh.gone"));
}

TEST_F(UnpackTest, AFileInTheSameLayerWinsOverItsWhiteout) {
  auto stats = Unpack({TarEntry::Whiteout("x"), TarEntry::File("x", "kept")});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(ReadFile(Root() + "/x"), "kept");
}

TEST_F(UnpackTest, WhiteoutOfDotDotIsRejected) {
  auto stats = Unpack({TarEntry::File("a/.wh...", "")});
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("whiteout of nothing"));
}

TEST_F(UnpackTest, LaterEntryReplacesEarlierOne) {
  auto stats = Unpack({
      TarEntry::Dir("d"),
      TarEntry::File("d/inner", "x"),
      TarEntry::File("d", "now a file"),
      TarEntry::File("f", "one"),
      TarEntry::File("f", "two"),
  });
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(ReadFile(Root() + "/d"), "now a file");
  EXPECT_EQ(ReadFile(Root() + "/f"), "two");
}

TEST_F(UnpackTest, KeepsUserXattrsAndDropsOverlayOnes) {
  TarEntry f = TarEntry::File("f", "x");
  f.xattrs["user.origin"] = "test";
  f.xattrs["trusted.overlay.redirect"] = "/elsewhere";
  auto stats = Unpack({f});
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_GE(stats->xattrs_dropped, 1u);  // pax may carry it in two header forms
  char value[64] = {};
  ssize_t n = getxattr((Root() + "/f").c_str(), "user.origin", value, sizeof(value));
  ASSERT_EQ(n, 4) << strerror(errno);
  EXPECT_EQ(std::string(value, 4), "test");
  EXPECT_LT(getxattr((Root() + "/f").c_str(), "trusted.overlay.redirect", value, sizeof(value)), 0);
}

TEST_F(UnpackTest, CorruptArchiveFailsWithAClearMessage) {
  std::string tar =
      BuildTar({TarEntry::File("a", std::string(10000, 'x'))}, LayerCompression::kNone);
  tar.resize(tar.size() / 2);  // Cuts file "a" short.
  UnpackOptions options;
  options.same_owner = false;
  auto stats = UnpackLayerBytes(tar, root_fd_.get(), options);
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("corrupt layer"));
}

TEST_F(UnpackTest, NotAnArchiveFails) {
  UnpackOptions options;
  auto stats =
      UnpackLayerBytes("this is not a tar file, not even close........", root_fd_.get(), options);
  ASSERT_FALSE(stats.ok());
}

TEST_F(UnpackTest, EnforcesByteAndEntryLimits) {
  UnpackOptions options;
  options.same_owner = false;
  options.limits.max_bytes = 1000;
  auto big = UnpackLayerBytes(BuildTar({TarEntry::File("big", std::string(2000, 'x'))}),
                              root_fd_.get(), options);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kResourceExhausted);

  TempDir other;
  base::UniqueFd fd(open(other.path().c_str(), O_RDONLY | O_DIRECTORY));
  options.limits = UnpackLimits{};
  options.limits.max_entries = 3;
  auto many = UnpackLayerBytes(BuildTar({TarEntry::File("1", ""), TarEntry::File("2", ""),
                                         TarEntry::File("3", ""), TarEntry::File("4", "")}),
                               fd.get(), options);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.status().code(), StatusCode::kResourceExhausted);
}

TEST_F(UnpackTest, EmptyLayerIsFine) {
  UnpackOptions options;
  auto stats = UnpackLayerBytes(BuildTar({}, LayerCompression::kGzip), root_fd_.get(), options);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->entries, 0u);
}

TEST_F(UnpackTest, BlobDigestIsVerified) {
  std::string tar = BuildTar({TarEntry::File("a", "x")}, LayerCompression::kZstd);
  TempDir dir;
  WriteFile(dir.Sub("blob"), tar);
  Sha256Stream hasher;
  hasher.Update(tar);
  Digest right = hasher.Finish();
  Digest wrong = Digest::FromHex(std::string(64, 'a'));
  UnpackOptions options;
  options.same_owner = false;
  {
    base::UniqueFd blob(open(dir.Sub("blob").c_str(), O_RDONLY));
    auto stats = UnpackLayerBlob(blob.get(), {wrong, static_cast<int64_t>(tar.size())},
                                 root_fd_.get(), options);
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(stats.status().code(), StatusCode::kDataLoss);
    EXPECT_THAT(stats.status().message(), HasSubstr("does not match its digest"));
    EXPECT_THAT(stats.status().message(), HasSubstr(right.ToString()));
  }
  {
    base::UniqueFd blob(open(dir.Sub("blob").c_str(), O_RDONLY));
    auto stats = UnpackLayerBlob(blob.get(), {right, 5}, root_fd_.get(), options);
    ASSERT_FALSE(stats.ok());
    EXPECT_THAT(stats.status().message(), HasSubstr("the manifest says 5"));
  }
}

}  // namespace
}  // namespace warren::image
