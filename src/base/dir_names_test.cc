#include "base/dir_names.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>

namespace warren::base {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(DirNamesTest, ListsEntriesSortedWithoutDots) {
  char tmpl[] = "/tmp/warren-dirnames-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  for (const char* name : {"b", ".hidden", "a"}) {
    int fd = open((dir + "/" + name).c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    close(fd);
  }
  ASSERT_EQ(mkdir((dir + "/c").c_str(), 0700), 0);
  EXPECT_THAT(DirNames(dir), ElementsAre(".hidden", "a", "b", "c"));
  for (const char* name : {"a", "b", ".hidden"}) unlink((dir + "/" + name).c_str());
  rmdir((dir + "/c").c_str());
  EXPECT_THAT(DirNames(dir), IsEmpty());
  rmdir(dir.c_str());
}

TEST(DirNamesTest, AMissingOrUnreadableDirectoryIsEmpty) {
  EXPECT_THAT(DirNames("/nonexistent/warren-dirnames"), IsEmpty());
  EXPECT_THAT(DirNames("/dev/null"), IsEmpty());  // not a directory
}

TEST(DirNamesTest, ClosesWhatItOpens) {
  auto fds = [] { return DirNames("/proc/self/fd").size(); };
  size_t before = fds();
  for (int i = 0; i < 100; ++i) DirNames("/proc/self");
  EXPECT_EQ(fds(), before);
}

}  // namespace
}  // namespace warren::base
