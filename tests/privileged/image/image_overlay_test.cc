// Layers imported by the store, stacked by a real overlayfs mount: what a sandbox would see.

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <filesystem>

#include "image/image_store.h"
#include "image/testing/oci_builder.h"
#include "mount_ns.h"

namespace warren::image {
namespace {

using ::testing::UnorderedElementsAre;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::OverlayMount;
using ::warren::image::testing::ReadFile;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    out.push_back(e.path().filename().string());
  }
  return out;
}

class OverlayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::EnterPrivateMountNamespace()) GTEST_SKIP() << "needs root";
    ImageStoreOptions options;
    options.root = tmp_.Sub("store");
    auto store = ImageStore::Open(options);
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = std::move(store).value();
  }

  TempDir tmp_;
  std::unique_ptr<ImageStore> store_;
};

TEST_F(OverlayTest, LaterLayersDeleteReplaceAndHideThroughARealOverlayMount) {
  OciLayoutBuilder b(tmp_.Sub("layout"));
  Descriptor l1 = b.AddLayer({
      TarEntry::Dir("etc"),
      TarEntry::File("etc/keep", "kept"),
      TarEntry::File("etc/delete-me", "old"),
      TarEntry::File("etc/replace-me", "v1"),
      TarEntry::Dir("opt"),
      TarEntry::Dir("opt/dir"),
      TarEntry::File("opt/dir/a", "a1"),
      TarEntry::File("opt/dir/b", "b1"),
      TarEntry::Dir("var"),
      TarEntry::Dir("var/tree"),
      TarEntry::File("var/tree/deep", "x"),
  });
  Descriptor l2 = b.AddLayer(
      {
          TarEntry::Whiteout("etc/delete-me"),
          TarEntry::File("etc/replace-me", "v2"),
          TarEntry::Dir("opt/dir"),
          TarEntry::Opaque("opt/dir"),
          TarEntry::File("opt/dir/c", "c2"),
          TarEntry::Whiteout("var/tree"),
      },
      LayerCompression::kZstd);
  Descriptor l3 = b.AddLayer(
      {
          TarEntry::File("opt/dir/a", "a3"),
          TarEntry::File("etc/new", "n3"),
      },
      LayerCompression::kNone);
  b.AddImage({l1, l2, l3}, {}, "layered:1");
  b.WriteIndex();
  ASSERT_TRUE(store_->Import(b.dir()).ok());

  auto resolved = store_->AcquireLease("sandbox-a", "layered:1");
  ASSERT_TRUE(resolved.ok()) << resolved.status();
  ASSERT_EQ(resolved->lower_dirs.size(), 3u);

  // The unpacked middle layer carries overlayfs's own whiteout forms.
  const std::string& mid = resolved->lower_dirs[1];
  struct stat st;
  ASSERT_EQ(lstat((mid + "/etc/delete-me").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(0, 0));
  char value[8] = {};
  ASSERT_EQ(getxattr((mid + "/opt/dir").c_str(), "trusted.overlay.opaque", value, sizeof(value)),
            1);
  EXPECT_EQ(value[0], 'y');

  std::filesystem::create_directories(tmp_.Sub("upper"));
  std::filesystem::create_directories(tmp_.Sub("work"));
  std::filesystem::create_directories(tmp_.Sub("merged"));
  std::string merged = tmp_.Sub("merged");
  OverlayMount overlay(merged, "lowerdir=" + resolved->OverlayLowerDirs() + ",upperdir=" +
                                   tmp_.Sub("upper") + ",workdir=" + tmp_.Sub("work"));
  ASSERT_TRUE(overlay.ok()) << "mount overlay: " << strerror(overlay.error());

  EXPECT_EQ(ReadFile(merged + "/etc/keep"), "kept");
  EXPECT_FALSE(std::filesystem::exists(merged + "/etc/delete-me"));
  EXPECT_EQ(ReadFile(merged + "/etc/replace-me"), "v2");
  EXPECT_EQ(ReadFile(merged + "/etc/new"), "n3");
  EXPECT_THAT(Names(merged + "/etc"), UnorderedElementsAre("keep", "replace-me", "new"));
  // Opaque: b1 from the bottom layer is hidden; a comes back from the top layer.
  EXPECT_THAT(Names(merged + "/opt/dir"), UnorderedElementsAre("a", "c"));
  EXPECT_EQ(ReadFile(merged + "/opt/dir/a"), "a3");
  EXPECT_FALSE(std::filesystem::exists(merged + "/var/tree"));
  EXPECT_TRUE(std::filesystem::is_directory(merged + "/var"));

  // Writes land in the upper dir; the shared layers are untouched.
  WriteFile(merged + "/etc/keep", "changed");
  EXPECT_EQ(ReadFile(resolved->lower_dirs[0] + "/etc/keep"), "kept");
  EXPECT_EQ(ReadFile(tmp_.Sub("upper") + "/etc/keep"), "changed");
}

TEST_F(OverlayTest, KeepsOwnershipSetuidDevicesCapabilitiesAndXattrs) {
  TarEntry owned = TarEntry::File("home/user/notes", "mine", 0600);
  owned.uid = 1000;
  owned.gid = 1000;
  TarEntry home = TarEntry::Dir("home/user", 0750);
  home.uid = 1000;
  home.gid = 1000;
  TarEntry su = TarEntry::File("usr/bin/su", "ELF", 04755);
  TarEntry sgid = TarEntry::File("usr/bin/wall", "ELF", 02755);
  sgid.gid = 5;
  TarEntry ping = TarEntry::File("usr/bin/ping", "ELF", 0755);
  // struct vfs_cap_data v2, effective, permitted = CAP_NET_RAW (13).
  std::string cap(20, '\0');
  cap[0] = 0x01;
  cap[3] = 0x02;
  cap[5] = 0x20;
  ping.xattrs["security.capability"] = cap;
  TarEntry tagged = TarEntry::File("etc/tagged", "t");
  tagged.xattrs["user.purpose"] = "demo";
  TarEntry null_dev = TarEntry::CharDevice("dev/null", 1, 3);
  TarEntry fifo;
  fifo.kind = TarEntry::Kind::kFifo;
  fifo.path = "run/fifo";
  fifo.mode = 0620;
  TarEntry link = TarEntry::Symlink("home/user/link", "notes");
  link.uid = 1000;
  link.gid = 1000;

  OciLayoutBuilder b(tmp_.Sub("layout"));
  Descriptor layer =
      b.AddLayer({TarEntry::Dir("home"), home, owned, link, TarEntry::Dir("usr"),
                  TarEntry::Dir("usr/bin"), su, sgid, ping, TarEntry::Dir("etc"), tagged,
                  TarEntry::Dir("dev"), null_dev, TarEntry::Dir("run"), fifo});
  b.AddImage({layer}, {}, "owned:1");
  b.WriteIndex();
  auto imported = store_->Import(b.dir());
  ASSERT_TRUE(imported.ok()) << imported.status();
  std::string root = store_->Resolve("owned:1")->lower_dirs[0];

  struct stat st;
  ASSERT_EQ(lstat((root + "/home/user/notes").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1000u);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  ASSERT_EQ(lstat((root + "/home/user").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  ASSERT_EQ(lstat((root + "/home/user/link").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(st.st_uid, 1000u);
  ASSERT_EQ(lstat((root + "/usr/bin/su").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_mode & 07777, 04755u);
  ASSERT_EQ(lstat((root + "/usr/bin/wall").c_str(), &st), 0);
  EXPECT_EQ(st.st_gid, 5u);
  EXPECT_EQ(st.st_mode & 07777, 02755u);
  ASSERT_EQ(lstat((root + "/dev/null").c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  EXPECT_EQ(st.st_rdev, makedev(1, 3));
  ASSERT_EQ(lstat((root + "/run/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 07777, 0620u);

  char buf[64];
  ssize_t n = getxattr((root + "/usr/bin/ping").c_str(), "security.capability", buf, sizeof(buf));
  ASSERT_EQ(n, 20) << strerror(errno);
  EXPECT_EQ(std::string(buf, 20), cap);
  n = getxattr((root + "/etc/tagged").c_str(), "user.purpose", buf, sizeof(buf));
  ASSERT_EQ(n, 4);
  EXPECT_EQ(std::string(buf, 4), "demo");
}

}  // namespace
}  // namespace warren::image
