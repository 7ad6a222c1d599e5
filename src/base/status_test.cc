#include "base/status.h"

#include <gtest/gtest.h>

#include <cerrno>

#include "base/result.h"

namespace warren {
namespace {

TEST(StatusTest, OkByDefault) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, MapsEveryCodeToHttpAndConnect) {
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kAlreadyExists), 409);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kAborted), 409);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kUnimplemented), 501);
  EXPECT_EQ(HttpStatusFromCode(StatusCode::kCancelled), 499);
  EXPECT_EQ(ConnectCodeName(StatusCode::kCancelled), "canceled");
  EXPECT_EQ(ConnectCodeName(StatusCode::kNotFound), "not_found");
  for (int c = 0; c <= 16; ++c) {
    auto code = static_cast<StatusCode>(c);
    EXPECT_EQ(CodeFromConnectName(ConnectCodeName(code)), code);
  }
  EXPECT_EQ(CodeFromConnectName("bogus"), StatusCode::kUnknown);
  EXPECT_EQ(CodeFromHttpStatus(404), StatusCode::kUnimplemented);
  EXPECT_EQ(CodeFromHttpStatus(502), StatusCode::kUnavailable);
}

TEST(StatusTest, ErrnoErrorPicksCodeAndText) {
  Status s = ErrnoError("open /x", ENOENT);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "open /x: No such file or directory");
  EXPECT_EQ(ErrnoError("mkdir", EEXIST).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(ErrnoError("delete link wv0", ENODEV).code(), StatusCode::kNotFound);
  EXPECT_EQ(ErrnoError("write", ENOSPC).code(), StatusCode::kResourceExhausted);
}

Result<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  ASSIGN_OR_RETURN(int h, Half(x));
  ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status NeedsEven(int x) {
  RETURN_IF_ERROR(Half(x).status());
  return Status::Ok();
}

TEST(ResultTest, PropagatesValuesAndErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  EXPECT_EQ(Quarter(6).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(NeedsEven(2).ok());
  EXPECT_EQ(NeedsEven(3).message(), "odd");
  Result<std::string> r = std::string("abc");
  EXPECT_EQ(r->size(), 3u);
  EXPECT_EQ(Result<int>(NotFoundError("x")).value_or(7), 7);
}

TEST(ResultDeathTest, ValueOfFailureIsABug) {
  Result<int> r = NotFoundError("gone");
  EXPECT_DEATH((void)r.value(), "gone");
}

}  // namespace
}  // namespace warren
