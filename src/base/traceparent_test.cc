#include "base/traceparent.h"

#include <gtest/gtest.h>

namespace warren::base {
namespace {

constexpr const char* kGood = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

TEST(Traceparent, ParsesAndFormatsTheSpecExample) {
  auto c = ParseTraceparent(kGood);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(TraceIdHex(c->trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(SpanIdHex(c->span_id), "00f067aa0ba902b7");
  EXPECT_TRUE(c->sampled());
  EXPECT_EQ(FormatTraceparent(*c), kGood);
}

TEST(Traceparent, KeepsTheUnsampledFlag) {
  auto c = ParseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00");
  ASSERT_TRUE(c.has_value());
  EXPECT_FALSE(c->sampled());
}

TEST(Traceparent, RejectsWhatTheSpecRejects) {
  for (const char* bad : {
           "",
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",     // short flags
           "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",     // short trace id
           "00-4bf92f3577b34da6a3ce929d0e0e47366-00f067aa0ba902b-01",    // misplaced dash
           "00-00000000000000000000000000000000-00f067aa0ba902b7-01",    // zero trace id
           "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",    // zero span id
           "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",    // upper case
           "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",    // forbidden version
           "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",  // 00 has no more fields
           "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
           "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
       }) {
    EXPECT_FALSE(ParseTraceparent(bad).has_value()) << bad;
  }
}

TEST(Traceparent, AcceptsALaterVersionByItsFirstFields) {
  EXPECT_TRUE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future")
                  .has_value());
  EXPECT_FALSE(ParseTraceparent("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01future")
                   .has_value());
}

TEST(Traceparent, TraceIdHexRoundTripsAndRejectsZeros) {
  auto id = ParseTraceIdHex("4bf92f3577b34da6a3ce929d0e0e4736");
  ASSERT_TRUE(id.has_value());
  EXPECT_EQ(TraceIdHex(*id), "4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_FALSE(ParseTraceIdHex("00000000000000000000000000000000").has_value());
  EXPECT_FALSE(ParseTraceIdHex("not-a-request-id").has_value());
}

}  // namespace
}  // namespace warren::base
