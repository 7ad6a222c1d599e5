#include "envd/envelope.h"

#include <gtest/gtest.h>

namespace warren::envd {
namespace {

TEST(EnvelopeTest, EncodesFlagAndBigEndianLength) {
  std::string e = EncodeEnvelope(kEnvelopeMessage, std::string(0x0102, 'x'));
  ASSERT_EQ(e.size(), 5u + 0x0102);
  EXPECT_EQ(e[0], '\x00');
  EXPECT_EQ(e.substr(1, 4), std::string("\x00\x00\x01\x02", 4));
  EXPECT_EQ(EncodeEnvelope(kEnvelopeEndStream, "{}"), std::string("\x02\x00\x00\x00\x02{}", 7));
}

TEST(EnvelopeTest, DecodesExactlyOneMessage) {
  auto payload = DecodeSingleEnvelope(EncodeEnvelope(0, R"({"path":"a"})"), 1024);
  ASSERT_TRUE(payload.ok()) << payload.status();
  EXPECT_EQ(*payload, R"({"path":"a"})");
}

TEST(EnvelopeTest, RejectsMalformedFramesWithClearErrors) {
  auto short_header = DecodeSingleEnvelope(std::string("\x00\x00", 2), 1024);
  EXPECT_EQ(short_header.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(short_header.status().message().find("5-byte"), std::string::npos);

  std::string truncated = EncodeEnvelope(0, "abcdef").substr(0, 8);
  auto t = DecodeSingleEnvelope(truncated, 1024);
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("declares 6 bytes"), std::string::npos);

  auto two = DecodeSingleEnvelope(EncodeEnvelope(0, "{}") + EncodeEnvelope(0, "{}"), 1024);
  EXPECT_EQ(two.status().code(), StatusCode::kInvalidArgument);

  auto compressed = DecodeSingleEnvelope(EncodeEnvelope(kEnvelopeCompressed, "{}"), 1024);
  EXPECT_EQ(compressed.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(compressed.status().message().find("compressed"), std::string::npos);

  auto eos = DecodeSingleEnvelope(EncodeEnvelope(kEnvelopeEndStream, "{}"), 1024);
  EXPECT_EQ(eos.status().code(), StatusCode::kInvalidArgument);
}

TEST(EnvelopeTest, OversizedFrameIsResourceExhaustedBeforeReadingIt) {
  // Declares 4 GiB - 1 but carries nothing: refused from the header alone.
  auto r = DecodeSingleEnvelope(std::string("\x00\xff\xff\xff\xff", 5), 16 << 20);
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted);
}

TEST(EnvelopeTest, ReaderReassemblesAcrossArbitrarySplits) {
  std::string wire = EncodeEnvelope(0, R"({"event":{"start":{"pid":1}}})") +
                     EncodeEnvelope(0, R"({"event":{"keepalive":{}}})") +
                     EncodeEnvelope(kEnvelopeEndStream, "{}");
  for (size_t step = 1; step < 9; ++step) {
    EnvelopeReader reader(1024);
    std::vector<Envelope> got;
    for (size_t i = 0; i < wire.size(); i += step) {
      reader.Feed(std::string_view(wire).substr(i, step));
      for (;;) {
        auto next = reader.Next();
        ASSERT_TRUE(next.ok());
        if (!*next) break;
        got.push_back(**next);
      }
    }
    ASSERT_EQ(got.size(), 3u) << "step " << step;
    EXPECT_EQ(got[1].payload, R"({"event":{"keepalive":{}}})");
    EXPECT_EQ(got[2].flags, kEnvelopeEndStream);
    EXPECT_EQ(reader.pending(), 0u);
  }
}

TEST(EnvelopeTest, EndStreamJsonCarriesConnectCodeNames) {
  EXPECT_EQ(EndStreamJson(Status::Ok()), "{}");
  EXPECT_EQ(EndStreamJson(NotFoundError("process with pid 7 not found")),
            R"({"error":{"code":"not_found","message":"process with pid 7 not found"}})");
  EXPECT_EQ(EndStreamJson(DeadlineExceededError("deadline exceeded")),
            R"({"error":{"code":"deadline_exceeded","message":"deadline exceeded"}})");
  EXPECT_EQ(ConnectErrorJson(AlreadyExistsError("x")),
            R"({"code":"already_exists","message":"x"})");
}

}  // namespace
}  // namespace warren::envd
