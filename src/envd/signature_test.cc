#include "envd/signature.h"

#include <gtest/gtest.h>

namespace warren::envd {
namespace {

constexpr const char* kToken = "0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0";

TEST(SignatureTest, MatchesTheE2bTestVector) {
  EXPECT_EQ(FileSignature("hello.txt", "read", "user", kToken, std::nullopt),
            "v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E");
}

FileAccess Signed(std::optional<int64_t> expiration) {
  FileAccess a;
  a.path = "hello.txt";
  a.username = "user";
  a.operation = "read";
  a.signature = FileSignature("hello.txt", "read", "user", kToken, expiration);
  if (expiration) a.signature_expiration = std::to_string(*expiration);
  return a;
}

TEST(SignatureTest, ChecksInE2bOrderWithExactMessages) {
  const std::optional<std::string> token = kToken;
  const int64_t now = 1'800'000'000;
  EXPECT_TRUE(CheckFileAccess(std::nullopt, FileAccess{}, now).ok());  // no token: open
  EXPECT_TRUE(CheckFileAccess(token, Signed(std::nullopt), now).ok());
  EXPECT_TRUE(CheckFileAccess(token, Signed(now + 60), now).ok());

  auto expired = CheckFileAccess(token, Signed(now - 1), now);
  EXPECT_EQ(expired.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(expired.message(), "signature is already expired");

  FileAccess none;
  none.operation = "read";
  EXPECT_EQ(CheckFileAccess(token, none, now).message(), "missing signature query parameter");

  FileAccess wrong_op = Signed(std::nullopt);
  wrong_op.operation = "write";
  EXPECT_EQ(CheckFileAccess(token, wrong_op, now).message(), "invalid signature");

  FileAccess stretched = Signed(now + 60);
  stretched.signature_expiration = std::to_string(now + 6000);  // tampered expiry
  EXPECT_EQ(CheckFileAccess(token, stretched, now).message(), "invalid signature");

  FileAccess header;
  header.header_token = kToken;
  EXPECT_TRUE(CheckFileAccess(token, header, now).ok());
  header.header_token = "nope";
  EXPECT_EQ(CheckFileAccess(token, header, now).message(), kUnauthorizedMessage);
}

TEST(SignatureTest, AccessTokenCheck) {
  EXPECT_TRUE(CheckAccessToken(std::nullopt, std::nullopt).ok());
  EXPECT_TRUE(CheckAccessToken(std::string("t"), std::string("t")).ok());
  EXPECT_EQ(CheckAccessToken(std::string("t"), std::nullopt).code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(CheckAccessToken(std::string("t"), std::string("T")).code(),
            StatusCode::kUnauthenticated);
}

}  // namespace
}  // namespace warren::envd
