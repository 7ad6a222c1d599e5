#include "os/user_db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace warren::os {
namespace {

class UserDbTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("user_db_test_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "passwd") << "root:x:0:0:root:/root:/bin/bash\n"
                                   << "# comment\n"
                                   << "broken line\n"
                                   << "user:x:1000:1000::/home/user:/bin/bash\r\n";
    std::ofstream(dir_ / "group") << "root:x:0:\n"
                                  << "user:x:1000:\n"
                                  << "sudo:x:27:user,other\n"
                                  << "docker:x:999:other\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  UserDb Db() { return UserDb((dir_ / "passwd").string(), (dir_ / "group").string()); }
  std::filesystem::path dir_;
};

TEST_F(UserDbTest, LooksUpUsersAndSupplementaryGroups) {
  auto db = Db();
  auto user = db.LookupUser("user");
  ASSERT_TRUE(user.ok()) << user.status();
  EXPECT_EQ(user->uid, 1000u);
  EXPECT_EQ(user->gid, 1000u);
  EXPECT_EQ(user->home, "/home/user");
  EXPECT_EQ(user->shell, "/bin/bash");
  EXPECT_EQ(user->groups, (std::vector<gid_t>{1000, 27}));
  EXPECT_EQ(db.LookupUid(0)->name, "root");
}

TEST_F(UserDbTest, UnknownUserIsNotFoundAndNamesFallBackToNumbers) {
  auto db = Db();
  auto missing = db.LookupUser("nobody");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "user 'nobody' not found");
  EXPECT_EQ(db.UserName(1000), "user");
  EXPECT_EQ(db.UserName(4242), "4242");
  EXPECT_EQ(db.GroupName(27), "sudo");
  EXPECT_EQ(db.GroupName(4242), "4242");
}

TEST_F(UserDbTest, MissingPasswdFileIsUnavailable) {
  UserDb db("/nonexistent/passwd", "/nonexistent/group");
  EXPECT_EQ(db.LookupUser("root").status().code(), StatusCode::kUnavailable);
}

TEST(UserDbParseTest, RejectsMalformedLines) {
  EXPECT_FALSE(ParsePasswdLine("a:x:notanumber:0::/:/bin/sh"));
  EXPECT_FALSE(ParsePasswdLine("a:x:0:0"));
  EXPECT_FALSE(ParsePasswdLine(":x:0:0::/:/bin/sh"));
  EXPECT_FALSE(ParseGroupLine("g:x:99999999999:"));
  EXPECT_EQ(ParseGroupLine("g:x:5:a,,b")->members, (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace warren::os
