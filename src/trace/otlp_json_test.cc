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

TEST(OtlpJson, SpansOfAnotherServiceGetTheirOwnResource) {
  SpanData ours;
  ours.name = "node.start";
  ours.context.trace_id = {1};
  ours.context.span_id = {2};
  SpanData envd = ours;
  envd.name = "envd POST /init";
  envd.context.span_id = {3};
  envd.service = "warren-envd";
  auto parsed = api::ParseJson(EncodeOtlpJson({envd, ours, envd}, "warren"));
  ASSERT_TRUE(parsed.ok());
  const api::Json& rs = (*parsed)["resourceSpans"];
  ASSERT_EQ(rs.size(), 2u);
  EXPECT_EQ(rs[0]["resource"]["attributes"][0]["value"]["stringValue"], "warren");
  EXPECT_EQ(rs[0]["scopeSpans"][0]["spans"].size(), 1u);
  EXPECT_EQ(rs[0]["scopeSpans"][0]["spans"][0]["name"], "node.start");
  EXPECT_EQ(rs[1]["resource"]["attributes"][0]["value"]["stringValue"], "warren-envd");
  EXPECT_EQ(rs[1]["scopeSpans"][0]["spans"].size(), 2u);
}

SpanData Sample() {
  SpanData s;
  s.name = "envd POST /process.Process/Start";
  s.context = *base::ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
  s.parent_span_id = {1, 2, 3, 4, 5, 6, 7, 8};
  s.has_parent = true;
  s.kind = SpanKind::kServer;
  s.start_unix_nanos = 1700000000000000000;
  s.end_unix_nanos = 1700000000001000000;
  s.attributes = {{"s", std::string("v\n\"")}, {"i", int64_t{-42}}, {"b", false}};
  s.error = true;
  s.status_message = "failed";
  return s;
}

TEST(OtlpJson, ASpanLineReadsBackAsWritten) {
  const SpanData s = Sample();
  const std::string line = EncodeOtlpSpan(s);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  auto back = DecodeOtlpSpan(line);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->name, s.name);
  EXPECT_EQ(back->context, s.context);
  EXPECT_TRUE(back->has_parent);
  EXPECT_EQ(back->parent_span_id, s.parent_span_id);
  EXPECT_EQ(back->kind, s.kind);
  EXPECT_EQ(back->start_unix_nanos, s.start_unix_nanos);
  EXPECT_EQ(back->end_unix_nanos, s.end_unix_nanos);
  EXPECT_EQ(back->attributes, s.attributes);
  EXPECT_TRUE(back->error);
  EXPECT_EQ(back->status_message, "failed");
  EXPECT_TRUE(back->service.empty());
}

// The line comes from a file a sandbox writes: anything off is refused, never trusted.
TEST(OtlpJson, AHostileSpanLineIsRefused) {
  const std::string good = EncodeOtlpSpan(Sample());
  auto with = [&](std::string_view from, std::string_view to) {
    std::string s = good;
    auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  };
  EXPECT_TRUE(DecodeOtlpSpan(good).has_value());
  for (const std::string& bad : {
           std::string(""),
           std::string("not json"),
           std::string("[]"),
           std::string("{}"),
           good.substr(0, good.size() - 1),
           with("4bf92f3577b34da6a3ce929d0e0e4736", "00000000000000000000000000000000"),
           with("4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6"),
           with("4bf92f3577b34da6a3ce929d0e0e4736", "4bf92f3577b34da6a3ce929d0e0e473g"),
           with("00f067aa0ba902b7", "0000000000000000"),
           with("\"kind\":2", "\"kind\":9"),
           with("\"kind\":2", "\"kind\":\"2\""),
           with("1700000000001000000", "1699999999999999999"),  // ends before it starts
           with("1700000000001000000", "99999999999999999999"),
           with("1700000000001000000", "-1"),
           with("\"intValue\":\"-42\"", "\"intValue\":\"-4x2\""),
           with("\"intValue\":\"-42\"", "\"intValue\":-42"),
           with("\"boolValue\":false", "\"boolValue\":\"no\""),
           with("\"name\":\"envd", "\"name\":\"" + std::string(kMaxDecodedName, 'x')),
           with("\"key\":\"s\"", "\"key\":\"\""),
           with("\"message\":\"failed\"", "\"message\":7"),
       }) {
    EXPECT_FALSE(DecodeOtlpSpan(bad).has_value()) << bad;
  }
  SpanData many = Sample();
  for (size_t i = 0; i < kMaxDecodedAttributes; ++i) many.attributes.emplace_back("k", true);
  EXPECT_FALSE(DecodeOtlpSpan(EncodeOtlpSpan(many)).has_value());
  SpanData long_value = Sample();
  long_value.attributes = {{"k", std::string(kMaxDecodedString + 1, 'v')}};
  EXPECT_FALSE(DecodeOtlpSpan(EncodeOtlpSpan(long_value)).has_value());
}

}  // namespace
}  // namespace warren::trace
