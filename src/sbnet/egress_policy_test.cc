#include "sbnet/egress_policy.h"

#include <gtest/gtest.h>

namespace warren::sbnet {
namespace {

TEST(EgressPolicyTest, AddressesAndRangesAreKeptNormalized) {
  auto p = MakeEgressPolicy(true, {"1.1.1.1", "8.8.8.9/24"}, {"0.0.0.0/0"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_EQ(p->allow_out.size(), 2u);
  EXPECT_EQ(os::FormatIpv4Prefix(p->allow_out[0]), "1.1.1.1/32");
  EXPECT_EQ(os::FormatIpv4Prefix(p->allow_out[1]), "8.8.8.0/24");
  EXPECT_EQ(os::FormatIpv4Prefix(p->deny_out[0]), "0.0.0.0/0");
  EXPECT_FALSE(p->IsDefault());
  EXPECT_TRUE(MakeEgressPolicy(true, {}, {})->IsDefault());
  EXPECT_FALSE(MakeEgressPolicy(false, {}, {})->IsDefault());
}

TEST(EgressPolicyTest, BadEntriesAreRefusedNamingTheListTheIndexAndTheEntry) {
  auto domain = MakeEgressPolicy(true, {"1.1.1.1", "example.com"}, {});
  EXPECT_EQ(domain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(domain.status().message().find("network.allowOut[1]: \"example.com\" is a domain"),
            std::string::npos)
      << domain.status().ToString();
  auto v6 = MakeEgressPolicy(true, {}, {"2001:db8::/32"});
  EXPECT_NE(v6.status().message().find("network.denyOut[0]: \"2001:db8::/32\" is IPv6"),
            std::string::npos);
  auto len = MakeEgressPolicy(true, {}, {"10.0.0.0/33"});
  EXPECT_NE(len.status().message().find("network.denyOut[0]"), std::string::npos);
  EXPECT_NE(len.status().message().find("0 to 32"), std::string::npos);
  EXPECT_FALSE(MakeEgressPolicy(true, {""}, {}).ok());
  EXPECT_FALSE(MakeEgressPolicy(true, {"1.2.3"}, {}).ok());
  std::vector<std::string> many(257, "1.1.1.1");
  EXPECT_NE(MakeEgressPolicy(true, many, {}).status().message().find("at most 256"),
            std::string::npos);
}

TEST(EgressPolicyTest, TheJsonFormRoundTripsAndIsValidatedOnTheWayIn) {
  auto p = MakeEgressPolicy(false, {"1.1.1.1"}, {"10.0.0.0/8"});
  auto j = EgressPolicyToJson(*p);
  EXPECT_EQ(j.dump(),
            R"({"allowInternetAccess":false,"allowOut":["1.1.1.1/32"],"denyOut":["10.0.0.0/8"]})");
  auto back = EgressPolicyFromJson(j);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(EgressPolicyToJson(*back), j);
  EXPECT_TRUE(EgressPolicyFromJson(nlohmann::json::object())->IsDefault());
  EXPECT_FALSE(EgressPolicyFromJson(nlohmann::json::parse(R"({"allowOut":"1.1.1.1"})")).ok());
  EXPECT_FALSE(EgressPolicyFromJson(nlohmann::json::parse(R"({"allowOut":[1]})")).ok());
  EXPECT_FALSE(EgressPolicyFromJson(nlohmann::json::parse(R"({"allowInternetAccess":"no"})")).ok());
  EXPECT_FALSE(EgressPolicyFromJson(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace warren::sbnet
