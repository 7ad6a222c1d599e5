#include "api/quantity.h"

#include <gtest/gtest.h>

#include "api/go_duration.h"
#include "api/int_or_string.h"

namespace warren::api {
namespace {

int64_t Milli(std::string_view text) {
  auto q = Quantity::Parse(text);
  EXPECT_TRUE(q.ok()) << text << ": " << q.status();
  return q.ok() ? q->MilliValue() : -1;
}

TEST(Quantity, ParsesKubernetesForms) {
  EXPECT_EQ(Milli("500m"), 500);
  EXPECT_EQ(Milli("2"), 2000);
  EXPECT_EQ(Milli("1.5"), 1500);
  EXPECT_EQ(Milli("0.1"), 100);
  EXPECT_EQ(Milli(".5"), 500);
  EXPECT_EQ(Milli("1Ki"), 1024 * 1000);
  EXPECT_EQ(Milli("1Gi"), (int64_t{1} << 30) * 1000);
  EXPECT_EQ(Milli("1.5Gi"), (int64_t{3} << 29) * 1000);
  EXPECT_EQ(Milli("128974848"), int64_t{128974848} * 1000);
  EXPECT_EQ(Milli("129e6"), int64_t{129000000} * 1000);
  EXPECT_EQ(Milli("129M"), int64_t{129000000} * 1000);
  EXPECT_EQ(Milli("123Mi"), int64_t{123} * 1024 * 1024 * 1000);
  EXPECT_EQ(Milli("1k"), 1000000);
  EXPECT_EQ(Milli("1e-3"), 1);
  EXPECT_EQ(Milli("0.0001"), 1);  // rounds up like Kubernetes' MilliValue
  EXPECT_EQ(Milli("-1"), -1000);
  EXPECT_EQ(Milli("+2"), 2000);
  EXPECT_EQ(Quantity::Parse("500m")->Value(), 1);
  EXPECT_EQ(Quantity::Parse("1Gi")->ToString(), "1Gi");
}

TEST(Quantity, RejectsMalformedText) {
  for (const char* bad : {"", "abc", "1x", "1 Gi", "1Gb", "1e", "1.2.3", "m", "1ee3", "1Ei0",
                          "99999999999999999999999", "10Ei"}) {
    auto q = Quantity::Parse(bad);
    ASSERT_FALSE(q.ok()) << bad;
    EXPECT_EQ(q.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(q.status().message().find("invalid quantity"), std::string::npos) << q.status();
  }
}

TEST(Quantity, CanonicalForms) {
  EXPECT_EQ(Quantity::FromMilli(500).ToString(), "500m");
  EXPECT_EQ(Quantity::FromMilli(2000).ToString(), "2");
  EXPECT_EQ(Quantity::FromValue(int64_t{1} << 30).ToString(), "1Gi");
  EXPECT_EQ(Quantity::FromValue(1536).ToString(), "1536");
  EXPECT_EQ(Quantity::FromValue(3 * 1024).ToString(), "3Ki");
  EXPECT_LT(*Quantity::Parse("500m"), *Quantity::Parse("1"));
}

TEST(IntOrString, ScalesPercentages) {
  EXPECT_EQ(*IntOrString::String("20%").Scaled(10, false), 2);
  EXPECT_EQ(*IntOrString::String("25%").Scaled(10, true), 3);
  EXPECT_EQ(*IntOrString::String("25%").Scaled(10, false), 2);
  EXPECT_EQ(*IntOrString::Int(4).Scaled(10, true), 4);
  EXPECT_FALSE(IntOrString::String("20").Scaled(10, true).ok());
  EXPECT_FALSE(IntOrString::String("x%").Scaled(10, true).ok());
}

TEST(GoDuration, FormatsLikeGo) {
  using namespace std::chrono_literals;
  EXPECT_EQ(FormatGoDuration(0s), "0s");
  EXPECT_EQ(FormatGoDuration(30s), "30s");
  EXPECT_EQ(FormatGoDuration(1min), "1m0s");
  EXPECT_EQ(FormatGoDuration(60min), "1h0m0s");
  EXPECT_EQ(FormatGoDuration(90min + 5s), "1h30m5s");
  EXPECT_EQ(FormatGoDuration(1500ms), "1.5s");
  EXPECT_EQ(FormatGoDuration(500ms), "500ms");
  EXPECT_EQ(FormatGoDuration(-1s), "-1s");
}

}  // namespace
}  // namespace warren::api
