#include "envd/download_headers.h"

#include <gtest/gtest.h>

#include <limits>

#include "envd/file_transfer.h"

namespace warren::envd {
namespace {

using Kind = RangeRequest::Kind;

std::optional<ContentCoding> Negotiate(std::optional<std::string_view> header) {
  return ChooseCoding(ParseAcceptEncoding(header));
}

TEST(AcceptEncoding, GzipWhenAskedIdentityOtherwise) {
  EXPECT_EQ(Negotiate(std::nullopt), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate(""), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("gzip"), ContentCoding::kGzip);  // what files.read({gzip: true}) sends
  EXPECT_EQ(Negotiate("gzip, deflate"), ContentCoding::kGzip);  // Node's fetch default
  EXPECT_EQ(Negotiate("GZIP"), ContentCoding::kGzip);
  EXPECT_EQ(Negotiate("x-gzip"), ContentCoding::kGzip);
  EXPECT_EQ(Negotiate("br, deflate"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("identity"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("*"), ContentCoding::kGzip);  // any coding, gzip included
}

TEST(AcceptEncoding, QValuesWeighTheChoice) {
  EXPECT_EQ(Negotiate("gzip;q=0.5, identity"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("gzip;q=1.0, identity;q=0.9"), ContentCoding::kGzip);
  EXPECT_EQ(ParseAcceptEncoding("gzip ; Q = 0.001").gzip, 1);
  EXPECT_EQ(Negotiate("gzip;q=0.001, identity;q=0"), ContentCoding::kGzip);
  EXPECT_EQ(Negotiate("gzip;q=0"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("gzip;q=0.000"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("*;q=0.2, identity;q=0.1"), ContentCoding::kGzip);
  AcceptedCodings a = ParseAcceptEncoding("gzip;q=0.25, identity;q=0.75");
  EXPECT_EQ(a.gzip, 250);
  EXPECT_EQ(a.identity, 750);
}

TEST(AcceptEncoding, RefusedIdentityWithNothingElseIsUnacceptable) {
  EXPECT_EQ(Negotiate("identity;q=0"), std::nullopt);
  EXPECT_EQ(Negotiate("*;q=0"), std::nullopt);
  EXPECT_EQ(Negotiate("br, identity;q=0"), std::nullopt);
  EXPECT_EQ(Negotiate("gzip;q=0, identity;q=0"), std::nullopt);
  EXPECT_EQ(Negotiate("identity;q=0, gzip"), ContentCoding::kGzip);
  EXPECT_EQ(Negotiate("*;q=0, identity"), ContentCoding::kIdentity);
  EXPECT_EQ(Negotiate("identity;q=0.001"), ContentCoding::kIdentity);
}

TEST(AcceptEncoding, MalformedWeightsSkipTheirElement) {
  // Each element with a bad q is dropped, not read as q=0 or q=1.
  for (std::string_view bad : {"gzip;q=", "gzip;q=2", "gzip;q=1.5", "gzip;q=0.1234", "gzip;q=-1",
                               "gzip;q=.5", "gzip;q=0.5x", "gzip;q=1.001"}) {
    EXPECT_EQ(Negotiate(bad), ContentCoding::kIdentity) << bad;
  }
  EXPECT_EQ(Negotiate("identity;q=abc"), ContentCoding::kIdentity);  // still acceptable
  EXPECT_EQ(Negotiate(",,;;, gzip;level=9 ,"), ContentCoding::kGzip);
  EXPECT_EQ(Negotiate(std::string(10000, ',')), ContentCoding::kIdentity);
}

TEST(Range, SingleRangesOfEachForm) {
  auto r = ParseRange("bytes=0-99", 1000);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 99u);
  r = ParseRange("bytes=900-", 1000);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 900u);
  EXPECT_EQ(r.last, 999u);
  r = ParseRange("bytes=-100", 1000);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 900u);
  EXPECT_EQ(r.last, 999u);
  r = ParseRange("Bytes=10-2000", 1000);  // the unit is case-insensitive; last clamps to the end
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 10u);
  EXPECT_EQ(r.last, 999u);
  r = ParseRange("bytes=-5000", 1000);  // a suffix longer than the file is all of it
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 0u);
  EXPECT_EQ(r.last, 999u);
}

TEST(Range, UnsatisfiableStartsAtOrPastTheEnd) {
  EXPECT_EQ(ParseRange("bytes=1000-", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=5000-6000", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=-0", 1000).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=0-", 0).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=-1", 0).kind, Kind::kUnsatisfiable);
  EXPECT_EQ(ParseRange("bytes=99999999999999999999999999-", 1000).kind, Kind::kUnsatisfiable);
}

TEST(Range, GarbageAndSeveralRangesAreIgnored) {
  for (std::string_view bad :
       {"", "bytes", "bytes=", "bytes=-", "bytes=a-b", "bytes=5-3", "bytes=-5-10", "bytes=+1-2",
        "bytes=1-2-3", "items=0-1", "bytes=0x10-20", "bytes=0-1, 5-6", "bytes=0-1,", "bytes 0-1",
        "bytes=--1", "bytes=1--2"}) {
    EXPECT_EQ(ParseRange(bad, 1000).kind, Kind::kWhole) << bad;
  }
}

TEST(Range, HugeNumbersSaturateInsteadOfWrapping) {
  auto r = ParseRange("bytes=10-99999999999999999999999999", 1000);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.last, 999u);
  r = ParseRange("bytes=-18446744073709551616", 1000);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.first, 0u);
  const uint64_t huge = std::numeric_limits<uint64_t>::max();
  r = ParseRange("bytes=18446744073709551614-", huge);
  EXPECT_EQ(r.kind, Kind::kPartial);
  EXPECT_EQ(r.last, huge - 1);
}

TEST(HttpDate, FormatsImfFixdateAndParsesAllThreeForms) {
  EXPECT_EQ(FormatHttpDate(784111777), "Sun, 06 Nov 1994 08:49:37 GMT");
  EXPECT_EQ(FormatHttpDate(0), "Thu, 01 Jan 1970 00:00:00 GMT");
  EXPECT_EQ(ParseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT"), 784111777);
  EXPECT_EQ(ParseHttpDate("Sunday, 06-Nov-94 08:49:37 GMT"), 784111777);
  EXPECT_EQ(ParseHttpDate("Sun Nov  6 08:49:37 1994"), 784111777);
  EXPECT_EQ(ParseHttpDate(FormatHttpDate(1767225600)), 1767225600);
  for (std::string_view bad :
       {"", "yesterday", "Sun, 06 Nov 1994 08:49:37 UTC", "Sun, 31 Feb 1994 08:49:37 GMT",
        "Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 06 Nov 1994 25:49:37 GMT",
        "Sun, 0x Nov 1994 08:49:37 GMT", "Sun Nov 6 08:49:37 1994", "1994-11-06T08:49:37Z"}) {
    EXPECT_EQ(ParseHttpDate(bad), std::nullopt) << bad;
  }
}

TEST(ETag, WeakFromSizeMtimeInode) {
  FileVersion f{4, 1, 5, 0x10};
  EXPECT_EQ(WeakETag(f), "W/\"4-3b9aca05-10\"");
  FileVersion other = f;
  other.inode = 0x11;
  EXPECT_NE(WeakETag(f), WeakETag(other));
  other = f;
  other.mtime_nsec = 6;
  EXPECT_NE(WeakETag(f), WeakETag(other));
}

TEST(Conditional, IfNoneMatchComparesWeakly) {
  const std::string etag = "W/\"4-1-10\"";
  EXPECT_TRUE(IfNoneMatchMatches("*", etag));
  EXPECT_TRUE(IfNoneMatchMatches(etag, etag));
  EXPECT_TRUE(IfNoneMatchMatches("\"4-1-10\"", etag));  // weak comparison ignores W/
  EXPECT_TRUE(IfNoneMatchMatches("\"x\", W/\"4-1-10\"", etag));
  EXPECT_FALSE(IfNoneMatchMatches("\"4-1-11\"", etag));
  EXPECT_FALSE(IfNoneMatchMatches("4-1-10", etag));  // unquoted: malformed
  EXPECT_FALSE(IfNoneMatchMatches("\"unterminated", etag));
  EXPECT_FALSE(IfNoneMatchMatches("", etag));
}

TEST(Conditional, IfRangeNeedsAStrongMatchOrTheExactDate) {
  const std::string etag = "W/\"4-1-10\"";
  EXPECT_FALSE(IfRangeHolds(etag, etag, 1));  // weak tags never match strongly
  EXPECT_FALSE(IfRangeHolds("\"4-1-10\"", etag, 1));
  EXPECT_TRUE(IfRangeHolds(FormatHttpDate(1000), etag, 1000));
  EXPECT_FALSE(IfRangeHolds(FormatHttpDate(999), etag, 1000));
  EXPECT_FALSE(IfRangeHolds(FormatHttpDate(1001), etag, 1000));
  EXPECT_FALSE(IfRangeHolds("garbage", etag, 1000));
}

TEST(PlanDownload, NotModifiedFromEitherValidator) {
  FileVersion f{100, 1000, 0, 7};
  const std::string etag = WeakETag(f);
  const std::string later = FormatHttpDate(5000);
  DownloadConditions c;
  c.if_none_match = etag;
  EXPECT_EQ(PlanDownload(c, f).status, 304);
  c.if_none_match = "\"other\"";
  c.if_modified_since = later;  // ignored: If-None-Match was given
  EXPECT_EQ(PlanDownload(c, f).status, 200);
  c.if_none_match.reset();
  EXPECT_EQ(PlanDownload(c, f).status, 304);
  const std::string at_mtime = FormatHttpDate(1000);
  c.if_modified_since = at_mtime;
  EXPECT_EQ(PlanDownload(c, f).status, 304);
  const std::string before_mtime = FormatHttpDate(999);
  c.if_modified_since = before_mtime;
  EXPECT_EQ(PlanDownload(c, f).status, 200);
  c.if_modified_since = "not a date";
  EXPECT_EQ(PlanDownload(c, f).status, 200);
}

TEST(PlanDownload, RangesAreServedInIdentityOnly) {
  FileVersion f{100, 1000, 0, 7};
  DownloadConditions c;
  c.accept_encoding = "gzip";
  DownloadPlan p = PlanDownload(c, f);
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.coding, ContentCoding::kGzip);
  EXPECT_EQ(p.length, 100u);
  c.range = "bytes=10-19";
  p = PlanDownload(c, f);
  EXPECT_EQ(p.status, 206);
  EXPECT_EQ(p.coding, ContentCoding::kIdentity);
  EXPECT_EQ(p.offset, 10u);
  EXPECT_EQ(p.length, 10u);
  EXPECT_EQ(p.content_range, "bytes 10-19/100");
  c.range = "bytes=100-";
  p = PlanDownload(c, f);
  EXPECT_EQ(p.status, 416);
  EXPECT_EQ(p.content_range, "bytes */100");
  c.range = "bytes=0-1,5-6";
  EXPECT_EQ(PlanDownload(c, f).status, 200);
  // A client that refuses identity gets the whole file gzipped, its Range ignored.
  c.accept_encoding = "gzip, identity;q=0";
  c.range = "bytes=10-19";
  p = PlanDownload(c, f);
  EXPECT_EQ(p.status, 200);
  EXPECT_EQ(p.coding, ContentCoding::kGzip);
  c.accept_encoding = "identity;q=0";
  EXPECT_EQ(PlanDownload(c, f).status, 406);
}

TEST(PlanDownload, GzipIsConditionalOnlyWhileIdentityIsAcceptable) {
  FileVersion f{100000, 1000, 0, 7};
  DownloadConditions c;
  c.accept_encoding = "gzip, deflate";  // Node's fetch: identity stays acceptable
  DownloadPlan p = PlanDownload(c, f);
  EXPECT_EQ(p.coding, ContentCoding::kGzip);
  EXPECT_TRUE(p.gzip_if_it_pays);
  c.accept_encoding = "gzip, identity;q=0";  // the client cannot take identity: gzip regardless
  p = PlanDownload(c, f);
  EXPECT_EQ(p.coding, ContentCoding::kGzip);
  EXPECT_FALSE(p.gzip_if_it_pays);
  c.accept_encoding = "gzip;q=0.5, *;q=0";
  EXPECT_FALSE(PlanDownload(c, f).gzip_if_it_pays);
  c.accept_encoding = std::nullopt;  // identity chosen outright: nothing to probe
  EXPECT_FALSE(PlanDownload(c, f).gzip_if_it_pays);
  c.accept_encoding = "gzip";  // ranges are identity, so never probed
  c.range = "bytes=0-9";
  p = PlanDownload(c, f);
  EXPECT_EQ(p.status, 206);
  EXPECT_FALSE(p.gzip_if_it_pays);
  c.range = "bytes=200000-";
  EXPECT_FALSE(PlanDownload(c, f).gzip_if_it_pays);
  c.range = std::nullopt;
  c.if_none_match = "*";
  EXPECT_FALSE(PlanDownload(c, f).gzip_if_it_pays);
}

TEST(PlanDownload, IfRangeDecidesBetweenPartAndWhole) {
  FileVersion f{100, 1000, 0, 7};
  DownloadConditions c;
  const std::string at_mtime = FormatHttpDate(1000);
  const std::string older = FormatHttpDate(900);
  const std::string etag = WeakETag(f);
  c.range = "bytes=0-9";
  c.if_range = at_mtime;
  EXPECT_EQ(PlanDownload(c, f).status, 206);
  c.if_range = older;  // the file changed since: send all of it
  EXPECT_EQ(PlanDownload(c, f).status, 200);
  c.if_range = etag;
  EXPECT_EQ(PlanDownload(c, f).status, 200);
}

TEST(ContentDisposition, QuotesSafelyAndEncodesNonAscii) {
  EXPECT_EQ(ContentDisposition("four.txt"), "inline; filename=\"four.txt\"");
  EXPECT_EQ(ContentDisposition("a \"b\"\\c"), "inline; filename=\"a \\\"b\\\"\\\\c\"");
  EXPECT_EQ(ContentDisposition("résumé.pdf"),
            "inline; filename=\"r__sum__.pdf\"; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf");
  // A newline in a file name must not split the header.
  EXPECT_EQ(ContentDisposition("a\r\nSet-Cookie: x"),
            "inline; filename=\"a__Set-Cookie: x\"; filename*=UTF-8''a%0D%0ASet-Cookie%3A%20x");
}

TEST(GzipEncoder, RoundTripsThroughTheDecoderInPieces) {
  std::string input;
  for (int i = 0; i < 200000; ++i) input += static_cast<char>((i * 7919) % 251);
  GzipEncoder encoder;
  std::string coded;
  for (size_t i = 0; i < input.size(); i += 65536) {
    ASSERT_TRUE(encoder.Encode(std::string_view(input).substr(i, 65536), coded).ok());
  }
  ASSERT_TRUE(encoder.Finish(coded).ok());
  EXPECT_FALSE(encoder.Finish(coded).ok());  // only once
  ASSERT_GE(coded.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(coded[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(coded[1]), 0x8b);
  GzipDecoder decoder;
  std::string back;
  ASSERT_TRUE(decoder.Decode(coded, back).ok());
  ASSERT_TRUE(decoder.Finish().ok());
  EXPECT_EQ(back, input);

  GzipEncoder empty;
  std::string nothing;
  ASSERT_TRUE(empty.Finish(nothing).ok());
  GzipDecoder decode_empty;
  std::string empty_back;
  ASSERT_TRUE(decode_empty.Decode(nothing, empty_back).ok());
  EXPECT_TRUE(decode_empty.Finish().ok());
  EXPECT_EQ(empty_back, "");
}

}  // namespace
}  // namespace warren::envd
