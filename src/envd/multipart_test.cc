#include "envd/multipart.h"

#include <gtest/gtest.h>

namespace warren::envd {
namespace {

struct Collected {
  std::vector<MultipartPart> parts;
  std::vector<std::string> bodies;
  int ends = 0;
};

MultipartParser::Callbacks Collect(Collected& c) {
  return {[&c](const MultipartPart& p) {
            c.parts.push_back(p);
            c.bodies.emplace_back();
            return Status::Ok();
          },
          [&c](std::string_view d) {
            c.bodies.back().append(d);
            return Status::Ok();
          },
          [&c]() {
            ++c.ends;
            return Status::Ok();
          }};
}

// What undici sends for two files (the multi-file write of the JS SDK).
const std::string kBody =
    "------formdata-undici-0123\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"/tmp/x.txt\"\r\n"
    "Content-Type: application/octet-stream\r\n\r\n"
    "hello\r\n--not-the-boundary\r\n"
    "\r\n------formdata-undici-0123\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"dir/y \\\"q\\\".txt\"\r\n\r\n"
    "\r\n------formdata-undici-0123--\r\n";

TEST(MultipartTest, BoundaryFromContentType) {
  EXPECT_EQ(*MultipartBoundary("multipart/form-data; boundary=----formdata-undici-0123"),
            "----formdata-undici-0123");
  EXPECT_EQ(*MultipartBoundary("Multipart/Form-Data; charset=x; boundary=\"a b\""), "a b");
  EXPECT_FALSE(MultipartBoundary("multipart/form-data").ok());
  EXPECT_FALSE(MultipartBoundary("text/plain; boundary=x").ok());
}

TEST(MultipartTest, ParsesPartsWhateverTheChunking) {
  for (size_t step : {size_t{1}, size_t{2}, size_t{3}, size_t{7}, size_t{64}, kBody.size()}) {
    Collected c;
    MultipartParser parser("----formdata-undici-0123", Collect(c));
    for (size_t i = 0; i < kBody.size(); i += step) {
      ASSERT_TRUE(parser.Feed(std::string_view(kBody).substr(i, step)).ok()) << "step " << step;
    }
    ASSERT_TRUE(parser.Finish().ok());
    ASSERT_EQ(c.parts.size(), 2u) << "step " << step;
    EXPECT_EQ(c.parts[0].name, "file");
    EXPECT_EQ(c.parts[0].filename, "/tmp/x.txt");
    EXPECT_EQ(c.parts[0].content_type, "application/octet-stream");
    EXPECT_EQ(c.bodies[0], "hello\r\n--not-the-boundary\r\n");
    EXPECT_EQ(c.parts[1].filename, "dir/y \"q\".txt");
    EXPECT_EQ(c.bodies[1], "");
    EXPECT_EQ(c.ends, 2);
  }
}

TEST(MultipartTest, TruncatedBodyIsAnError) {
  Collected c;
  MultipartParser parser("----formdata-undici-0123", Collect(c));
  ASSERT_TRUE(parser.Feed(kBody.substr(0, 120)).ok());
  auto s = parser.Finish();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("closing boundary"), std::string::npos);
}

TEST(MultipartTest, MalformedHeadersAreRefused) {
  Collected c;
  MultipartParser parser("b", Collect(c));
  EXPECT_EQ(parser.Feed("--b\r\nno colon here\r\n\r\nx\r\n--b--").code(),
            StatusCode::kInvalidArgument);
  Collected d;
  MultipartParser no_disposition("b", Collect(d));
  EXPECT_EQ(no_disposition.Feed("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--").code(),
            StatusCode::kInvalidArgument);
  Collected e;
  MultipartParser huge("b", Collect(e));
  EXPECT_EQ(huge.Feed("--b\r\nX: " + std::string(20000, 'a')).code(), StatusCode::kInvalidArgument);
}

TEST(MultipartTest, CallbackErrorStopsTheParse) {
  MultipartParser parser(
      "b", {[](const MultipartPart&) { return InvalidArgumentError("no"); },
            [](std::string_view) { return Status::Ok(); }, [] { return Status::Ok(); }});
  EXPECT_EQ(
      parser.Feed("--b\r\nContent-Disposition: form-data; name=file\r\n\r\nx\r\n--b--").message(),
      "no");
}

}  // namespace
}  // namespace warren::envd
