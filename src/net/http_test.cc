#include "net/http.h"

#include <gtest/gtest.h>

#include "net/dial.h"
#include "net/http_wire.h"
#include "net/message_parser.h"
#include "net/request_target.h"

namespace warren::net {
namespace {

TEST(HeadersTest, CaseInsensitiveInOrder) {
  Headers h;
  h.Add("Set-Cookie", "a=1");
  h.Add("set-cookie", "b=2");
  h.Add("Content-Type", "text/plain");
  EXPECT_EQ(h.Get("SET-COOKIE"), "a=1");
  ASSERT_EQ(h.GetAll("Set-Cookie").size(), 2u);
  EXPECT_EQ(h.GetAll("Set-Cookie")[1], "b=2");
  h.Set("set-COOKIE", "c=3");
  EXPECT_EQ(h.GetAll("Set-Cookie").size(), 1u);
  EXPECT_EQ(h.Get("Set-Cookie"), "c=3");
  h.Remove("content-type");
  EXPECT_FALSE(h.Has("Content-Type"));
  EXPECT_FALSE(h.Get("Missing").has_value());
}

TEST(RequestTest, QueryParamsDecode) {
  Request r;
  r.raw_query = "path=%2Fhome%2Fuser%2Fa+b.txt&username=user&flag&empty=&x=1&x=2&bad=%zz";
  EXPECT_EQ(r.Query("path"), "/home/user/a b.txt");
  EXPECT_EQ(r.Query("username"), "user");
  EXPECT_EQ(r.Query("flag"), "");
  EXPECT_EQ(r.Query("empty"), "");
  EXPECT_EQ(r.Query("x"), "1");
  EXPECT_EQ(r.Query("bad"), "%zz");  // malformed escapes are kept verbatim
  EXPECT_FALSE(r.Query("missing").has_value());
  EXPECT_EQ(r.QueryParams().size(), 7u);
}

TEST(RequestTargetTest, OriginAndAbsoluteForms) {
  auto t = ParseRequestTarget("/a%20b/c?x=1&y=%2F");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->raw_path, "/a%20b/c");
  EXPECT_EQ(t->path, "/a b/c");
  EXPECT_EQ(t->raw_query, "x=1&y=%2F");
  t = ParseRequestTarget("http://example.com:8080/v2/sandboxes?limit=1");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->path, "/v2/sandboxes");
  EXPECT_EQ(t->raw_query, "limit=1");
  t = ParseRequestTarget("http://example.com");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->path, "/");
}

TEST(RequestTargetTest, RejectsWhatCouldEscapeOrConfuse) {
  for (const char* bad : {"", "*", "example.com:443", "/a/../b", "/a/%2e%2e/b", "/./x", "/a%zz",
                          "/a%00b", "/a#frag", "ftp://x/y", "http:///nohost", "/a%2F..%2Fb"}) {
    auto t = ParseRequestTarget(bad);
    EXPECT_FALSE(t.ok()) << bad;
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(RequestParserTest, HeadThenChunkedBody) {
  RequestParser p(8192);
  std::string wire =
      "POST /files?path=a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
      "Expect: 100-continue\r\n\r\n5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
  // Byte by byte: the head is only consumed once complete.
  size_t consumed = 0;
  for (size_t end = 1; end <= wire.size() && !p.head_done(); ++end) {
    auto n = p.ParseHead(std::string_view(wire).substr(consumed, end - consumed));
    ASSERT_TRUE(n.ok()) << n.status();
    consumed += *n;
  }
  ASSERT_TRUE(p.head_done());
  EXPECT_EQ(p.head().method, "POST");
  EXPECT_EQ(p.head().target, "/files?path=a");
  EXPECT_TRUE(p.head().chunked);
  EXPECT_TRUE(p.head().expect_continue);
  EXPECT_TRUE(p.head().keep_alive);
  p.SetBodyLimit(100);
  std::string body;
  auto n = p.ParseBody(std::string_view(wire).substr(consumed), body);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(p.body_done());
  EXPECT_EQ(body, "hello world");
  EXPECT_EQ(std::string_view(wire).substr(consumed + *n), "GET / HTTP/1.1\r\n");
}

TEST(RequestParserTest, LimitsAndMalformedHeads) {
  {
    RequestParser p(64);
    auto n =
        p.ParseHead("GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(100, 'a') + "\r\n\r\n");
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(n.status().message().find("64 bytes"), std::string::npos) << n.status();
  }
  {
    RequestParser p(8192);
    ASSERT_TRUE(
        p.ParseHead("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n").ok());
    p.SetBodyLimit(4);
    std::string body;
    auto n = p.ParseBody("5\r\nhello\r\n0\r\n\r\n", body);
    ASSERT_FALSE(n.ok());
    EXPECT_EQ(n.status().code(), StatusCode::kResourceExhausted);
  }
  for (const char* bad :
       {"GET / HTTP/1.1\r\n\r\n",                        // no Host
        "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",  // two Hosts
        "GET / HTTP/2.0\r\nHost: a\r\n\r\n",             // version
        "GET /\r\n\r\n",                                 // HTTP/0.9
        "G@T / HTTP/1.1\r\nHost: a\r\n\r\n",             // method token
        "GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nExpect: teapot\r\n\r\n",
        "GET / HTTP/1.1\r\nHo st: a\r\n\r\n"}) {
    RequestParser p(8192);
    auto n = p.ParseHead(bad);
    EXPECT_FALSE(n.ok()) << bad;
    if (!n.ok()) {
      EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument) << bad;
    }
  }
}

TEST(ResponseParserTest, ChunkedEofDelimitedAndHead) {
  ResponseParser p(8192);
  p.Reset(false);
  std::string body;
  auto n =
      p.Parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", body);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(p.done());
  EXPECT_EQ(body, "abc");

  p.Reset(false);
  body.clear();
  ASSERT_TRUE(p.Parse("HTTP/1.0 200 OK\r\n\r\nuntil close", body).ok());
  EXPECT_TRUE(p.body_until_eof());
  EXPECT_FALSE(p.done());
  ASSERT_TRUE(p.ParseEof().ok());
  EXPECT_EQ(body, "until close");

  p.Reset(true);  // HEAD: Content-Length describes a body that is not sent
  body.clear();
  ASSERT_TRUE(p.Parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", body).ok());
  EXPECT_TRUE(p.done());
  EXPECT_EQ(p.head().content_length, 10u);

  p.Reset(false);
  body.clear();
  ASSERT_TRUE(p.Parse("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", body).ok());
  Status eof = p.ParseEof();
  EXPECT_EQ(eof.code(), StatusCode::kUnavailable) << eof;
}

TEST(WireTest, HeadsSkipFramingFieldsAndUnsafeLines) {
  Headers h;
  h.Add("Content-Type", "text/plain");
  h.Add("Content-Length", "999");
  h.Add("X-Evil", "a\r\nInjected: yes");
  h.Add("Bad Name", "x");
  std::string out;
  Framing f;
  f.content_length = 5;
  f.request_id = "rid";
  f.connection = "close";
  AppendResponseHead(out, 404, h, f);
  EXPECT_EQ(out.rfind("HTTP/1.1 404 Not Found\r\n", 0), 0u);
  EXPECT_NE(out.find("Content-Type: text/plain\r\n"), std::string::npos);
  EXPECT_NE(out.find("Content-Length: 5\r\n"), std::string::npos);
  EXPECT_EQ(out.find("999"), std::string::npos);
  EXPECT_EQ(out.find("Injected"), std::string::npos);
  EXPECT_EQ(out.find("Bad Name"), std::string::npos);
  EXPECT_NE(out.find("X-Request-ID: rid\r\n"), std::string::npos);
  EXPECT_NE(out.find("Date: "), std::string::npos);
  EXPECT_NE(out.find("Connection: close\r\n\r\n"), std::string::npos);
}

TEST(WireTest, RequestIdsAndErrorBodies) {
  EXPECT_TRUE(IsSaneRequestId("abc-123_x.y:z"));
  EXPECT_FALSE(IsSaneRequestId(""));
  EXPECT_FALSE(IsSaneRequestId("has space"));
  EXPECT_FALSE(IsSaneRequestId(std::string(129, 'a')));
  EXPECT_EQ(ErrorJson(413, "too \"big\"\n"), R"({"code":413,"message":"too \"big\"\n"})");
}

TEST(DialTest, ParseHostPort) {
  auto hp = ParseHostPort("http://127.0.0.1:8080/");
  ASSERT_TRUE(hp.ok()) << hp.status();
  EXPECT_EQ(hp->host, "127.0.0.1");
  EXPECT_EQ(hp->port, 8080);
  hp = ParseHostPort("[::1]:9");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->host, "::1");
  EXPECT_EQ(hp->authority(), "[::1]:9");
  hp = ParseHostPort("localhost");
  ASSERT_TRUE(hp.ok());
  EXPECT_EQ(hp->port, 80);
  for (const char* bad : {"https://x:1", "x:0", "x:70000", "x:abc", "::1:80", "http://x/y", ""}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
}

TEST(DialTest, RefusedPortIsUnavailable) {
  // Nothing listens on port 1 here.
  auto fd = DialTcp("127.0.0.1", 1, std::chrono::seconds(2));
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), StatusCode::kUnavailable) << fd.status();
  auto bad = DialTcp("no-such-host.invalid", 80, std::chrono::seconds(2));
  ASSERT_FALSE(bad.ok());
}

}  // namespace
}  // namespace warren::net
