#include "base/small_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "base/testing/temp_dir.h"

namespace warren::base {
namespace {

TEST(WriteFileAtomicallyTest, ReplacesTheFileWithTheModeAndOwnerAsked) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/f";
  ASSERT_TRUE(WriteFileAtomically(path, "old").ok());
  // Root may give the file away (a sandbox's root as the host sees it); anyone else keeps it.
  const uid_t owner = getuid() == 0 ? 65534 : getuid();
  Status s = WriteFileAtomically(
      path, "new",
      AtomicWrite{.mode = 0600, .owner_uid = owner, .owner_gid = owner, .unique_temp = true});
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(ReadSmallFile(path).value_or(""), "new");
  struct stat st {};
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  EXPECT_EQ(st.st_uid, owner);
  // Nothing else is left beside it: the temporary file had a name of its own and took its place.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++files;
  EXPECT_EQ(files, 1);
}

TEST(WriteFileAtomicallyTest, AFailureNamesTheFileAndLeavesTheOldOne) {
  testing::TempDir dir;
  Status s = WriteFileAtomically(dir.path() + "/missing/f", "x", AtomicWrite{.unique_temp = true});
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find(dir.path() + "/missing/f."), std::string::npos) << s;
}

}  // namespace
}  // namespace warren::base
