#include "envd/paths.h"

#include <gtest/gtest.h>

namespace warren::envd {
namespace {

os::UserInfo User() {
  os::UserInfo u;
  u.name = "user";
  u.uid = 1000;
  u.gid = 1000;
  u.home = "/home/user";
  return u;
}

TEST(PathsTest, CleanLikeGo) {
  EXPECT_EQ(CleanPath("/a//b/./c/.."), "/a/b");
  EXPECT_EQ(CleanPath("/../x"), "/x");
  EXPECT_EQ(CleanPath("a/../../b"), "../b");
  EXPECT_EQ(CleanPath(""), ".");
  EXPECT_EQ(CleanPath("/"), "/");
}

TEST(PathsTest, ResolvesLikeE2b) {
  const auto u = User();
  EXPECT_EQ(*ResolvePath("a.txt", u, std::nullopt), "/home/user/a.txt");
  EXPECT_EQ(*ResolvePath("dir/../b.txt", u, std::nullopt), "/home/user/b.txt");
  EXPECT_EQ(*ResolvePath("~", u, std::nullopt), "/home/user");
  EXPECT_EQ(*ResolvePath("~/x/", u, std::nullopt), "/home/user/x");
  EXPECT_EQ(*ResolvePath("/tmp//x", u, std::nullopt), "/tmp/x");
  EXPECT_EQ(*ResolvePath("", u, std::nullopt), "/home/user");
  EXPECT_EQ(*ResolvePath("", u, std::string("/work")), "/work");
  // Relative paths are anchored at home even when a workdir is set.
  EXPECT_EQ(*ResolvePath("a", u, std::string("/work")), "/home/user/a");
}

TEST(PathsTest, RefusesWhatCannotBeMeant) {
  const auto u = User();
  EXPECT_EQ(ResolvePath("~root/x", u, std::nullopt).status().code(), StatusCode::kInvalidArgument);
  auto escape = ResolvePath("../../etc/passwd", u, std::nullopt);
  EXPECT_EQ(escape.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(escape.status().message().find("escapes the home directory"), std::string::npos);
  EXPECT_EQ(ResolvePath(std::string("a\0b", 3), u, std::nullopt).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ResolvePath(std::string(5000, 'a'), u, std::nullopt).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(PathsTest, UserFromBasicAuth) {
  EXPECT_EQ(*UserFromBasicAuth(std::nullopt, "user"), "user");
  EXPECT_EQ(*UserFromBasicAuth("Basic cm9vdDo=", "user"), "root");  // "root:"
  EXPECT_EQ(*UserFromBasicAuth("basic dXNlcjo=", "root"), "user");
  EXPECT_FALSE(UserFromBasicAuth("Bearer x", "user").ok());
  EXPECT_FALSE(UserFromBasicAuth("Basic !!!", "user").ok());
}

}  // namespace
}  // namespace warren::envd
