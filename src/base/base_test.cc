#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include "base/encoding.h"
#include "base/ids.h"
#include "base/scope_guard.h"
#include "base/strings.h"
#include "base/time_format.h"
#include "base/unique_fd.h"

namespace warren::base {
namespace {

TEST(IdsTest, SandboxIdsLookLikeE2bs) {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = NewSandboxId();
    ASSERT_TRUE(IsValidSandboxId(id)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
  EXPECT_FALSE(IsValidSandboxId("iABCDEFGHIJKLMNOPQRST"));
  EXPECT_FALSE(IsValidSandboxId("i123"));
}

TEST(IdsTest, UuidAndHexShapes) {
  std::string u = NewUuid();
  ASSERT_EQ(u.size(), 36u);
  EXPECT_EQ(u[14], '4');
  EXPECT_EQ(NewRequestId().size(), 32u);
  EXPECT_EQ(RandomHex(32).size(), 64u);
  EXPECT_EQ(GenerateNameSuffix().size(), 5u);
}

TEST(StringsTest, SplitJoinTrim) {
  auto parts = Split("a,,b", ',');
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1], "");
  auto ne = SplitNonEmpty(" a , ,b ", ',');
  ASSERT_EQ(ne.size(), 2u);
  EXPECT_EQ(ne[0], "a");
  EXPECT_EQ(Join({"x", "y"}, ", "), "x, y");
  EXPECT_EQ(TrimSpace("  \tz \n"), "z");
  EXPECT_EQ(*ParseInt64("-42"), -42);
  EXPECT_FALSE(ParseInt64("42x"));
  EXPECT_FALSE(ParseUint64("-1"));
  EXPECT_TRUE(EqualsIgnoreCase("X-Api-Key", "x-api-KEY"));
}

TEST(StringsTest, PercentCoding) {
  EXPECT_EQ(*PercentDecode("my%2520key%3Da"), "my%20key=a");
  EXPECT_EQ(*PercentDecode("a+b"), "a b");
  EXPECT_EQ(*PercentDecode("a+b", false), "a+b");
  EXPECT_FALSE(PercentDecode("bad%2"));
  EXPECT_FALSE(PercentDecode("bad%zz"));
  EXPECT_EQ(PercentEncode("a&b=c d"), "a%26b%3Dc%20d");
}

TEST(EncodingTest, Base64BothAlphabets) {
  EXPECT_EQ(Base64Encode("hi\n"), "aGkK");
  EXPECT_EQ(Base64Encode("err\n"), "ZXJyCg==");
  EXPECT_EQ(*Base64Decode("ZXJyCg=="), "err\n");
  EXPECT_EQ(*Base64Decode("ZXJyCg"), "err\n");
  EXPECT_EQ(Base64UrlEncode("\xfb\xff"), "-_8");
  EXPECT_EQ(*Base64Decode("-_8"), "\xfb\xff");
  EXPECT_FALSE(Base64Decode("a"));
  EXPECT_FALSE(Base64Decode("ab$d"));
}

TEST(EncodingTest, E2bSignatureTestVector) {
  // e2b-protocol.md §3.1: path hello.txt, read, user, token, no expiration.
  std::string payload = "hello.txt:read:user:0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0";
  EXPECT_EQ("v1_" + Base64EncodeNoPad(Sha256(payload)),
            "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E");
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_TRUE(ConstantTimeEquals("abc", "abc"));
  EXPECT_FALSE(ConstantTimeEquals("abc", "abd"));
  EXPECT_EQ(*HexDecode(HexEncode("\x01\xab")), "\x01\xab");
}

TEST(TimeTest, Rfc3339RoundTrip) {
  auto t = ParseRfc3339("2026-01-01T00:00:00.123456789Z");
  ASSERT_TRUE(t);
  EXPECT_EQ(FormatRfc3339Nanos(*t), "2026-01-01T00:00:00.123456789Z");
  EXPECT_EQ(FormatRfc3339(*t), "2026-01-01T00:00:00Z");
  EXPECT_EQ(FormatRfc3339Millis(*t), "2026-01-01T00:00:00.123Z");
  auto off = ParseRfc3339("2026-01-01T02:00:00+02:00");
  ASSERT_TRUE(off);
  EXPECT_EQ(FormatRfc3339(*off), "2026-01-01T00:00:00Z");
  EXPECT_FALSE(ParseRfc3339("2026-01-01 junk"));
  EXPECT_FALSE(ParseRfc3339("2026-13-01T00:00:00Z"));
}

TEST(TimeTest, Durations) {
  using namespace std::chrono_literals;
  EXPECT_EQ(*ParseDuration("30s"), 30s);
  EXPECT_EQ(*ParseDuration("1h30m"), 90min);
  EXPECT_EQ(*ParseDuration("500ms"), 500ms);
  EXPECT_EQ(*ParseDuration("-1s"), -1s);
  EXPECT_EQ(*ParseDuration("2d"), 48h);
  EXPECT_FALSE(ParseDuration("abc"));
  EXPECT_FALSE(ParseDuration("10"));
}

TEST(UniqueFdTest, ClosesOnDestructionAndMove) {
  int raw;
  {
    UniqueFd fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    raw = fd.get();
    ASSERT_GE(raw, 0);
    UniqueFd moved = std::move(fd);
    EXPECT_FALSE(fd.valid());
    EXPECT_EQ(moved.get(), raw);
  }
  EXPECT_EQ(::fcntl(raw, F_GETFD), -1);
}

TEST(ScopeGuardTest, RunsUnlessDismissed) {
  int runs = 0;
  {
    auto g = ScopeExit([&] { ++runs; });
  }
  {
    auto g = ScopeExit([&] { ++runs; });
    g.Dismiss();
  }
  EXPECT_EQ(runs, 1);
}

}  // namespace
}  // namespace warren::base
