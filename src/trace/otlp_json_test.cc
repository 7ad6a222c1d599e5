#include "trace/otlp_json.h"

#include <gtest/gtest.h>

#include "api/json.h"

namespace warren::trace {
namespace {

TEST(OtlpJson, HasTheShapeCollectorsRead) {
  SpanData s;
  s.name = "manager.CreateSandbox";
  s.context = *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  s.parent_span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  s.has_parent = true;
  s.kind = SpanKind::kServer;
  s.start_unix_nanos = 1700000000000000000;
  s.end_unix_nanos = 1700000000001000000;
  s.attributes = {{"s", std::string("v")}, {"i", int64_t{9007199254740993}}, {"b", true}};
  s.error = true;
  s.status_message = "failed";
  auto parsed = api::ParseJson(EncodeOtlpJson({s}, "warren-test"));
  ASSERT_TRUE(parsed.ok());
  const api::Json& rs = (*parsed)["resourceSpans"][0];
  EXPECT_EQ(rs["resource"]["attributes"][0]["key"], "service.name");
  EXPECT_EQ(rs["resource"]["attributes"][0]["value"]["stringValue"], "warren-test");
  EXPECT_EQ(rs["scopeSpans"][0]["scope"]["name"], "warren");
  const api::Json& span = rs["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(span["spanId"], "00f067aa0ba902b7");
  EXPECT_EQ(span["parentSpanId"], "0102030405060708");
  EXPECT_EQ(span["name"], "manager.CreateSandbox");
  EXPECT_EQ(span["kind"], 2);
  // 64-bit integers are strings in OTLP/JSON (JavaScript would lose their low bits).
  EXPECT_EQ(span["startTimeUnixNano"], "1700000000000000000");
  EXPECT_EQ(span["endTimeUnixNano"], "1700000000001000000");
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"], "v");
  EXPECT_EQ(span["attributes"][1]["value"]["intValue"], "9007199254740993");
  EXPECT_EQ(span["attributes"][2]["value"]["boolValue"], true);
  EXPECT_EQ(span["status"]["code"], 2);
  EXPECT_EQ(span["status"]["message"], "failed");
}

TEST(OtlpJson, ARootHasNoParentAndAnOkSpanNoStatusCode) {
  SpanData s;
  s.name = "root";
  s.context.trace_id = {1};
  s.context.span_id = {2};
  auto parsed = api::ParseJson(EncodeOtlpJson({s}, "warren"));
  ASSERT_TRUE(parsed.ok());
  const api::Json& span = (*parsed)["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_FALSE(span.contains("parentSpanId"));
  EXPECT_TRUE(span["status"].empty());
}

TEST(OtlpJson, AnythingASandboxAnsweredStaysValidJson) {
  SpanData s;
  s.name = "infra.initRuntime";
  s.context.trace_id = {1};
  s.context.span_id = {2};
  const std::string nasty = std::string("quote\" back\\ nl\n nul") + std::string(1, '\0') +
                            "\x01 bad\xff\xc3 ok\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
  s.attributes = {{"k\"ey", nasty}};
  s.error = true;
  s.status_message = nasty;
  auto parsed = api::ParseJson(EncodeOtlpJson({s}, "warren"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const api::Json& span = (*parsed)["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
  EXPECT_EQ(span["attributes"][0]["key"], "k\"ey");
  EXPECT_EQ(span["attributes"][0]["value"]["stringValue"],
            std::string("quote\" back\\ nl\n nul") + std::string(1, '\0') +
                "\x01 bad\xef\xbf\xbd\xef\xbf\xbd ok\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
  EXPECT_EQ(span["status"]["message"], span["attributes"][0]["value"]["stringValue"]);
}

TEST(OtlpJson, AnEmptyBatchIsStillARequest) {
  auto parsed = api::ParseJson(EncodeOtlpJson({}, "warren"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_TRUE((*parsed)["resourceSpans"][0]["scopeSpans"][0]["spans"].empty());
}

}  // namespace
}  // namespace warren::trace
