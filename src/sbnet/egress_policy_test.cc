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
  auto denied_domain = MakeEgressPolicy(true, {}, {"1.1.1.1", "example.com"});
  EXPECT_EQ(denied_domain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(denied_domain.status().message().find(
                "network.denyOut[1]: \"example.com\" is a domain name; denyOut takes"),
            std::string::npos)
      << denied_domain.status().ToString();
  for (const char* bad : {"exa mple.com", "-a.com", "com", "*.", "a..b", "*.*.a.com", "a_b.com"}) {
    auto r = MakeEgressPolicy(true, {bad}, {});
    EXPECT_NE(r.status().message().find("nor a domain name"), std::string::npos) << bad;
  }
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

TEST(EgressPolicyTest, DomainsAreMatchedExactlyOrAsSubdomainsOfAWildcard) {
  auto p = MakeEgressPolicy(true, {"Example.COM.", "*.pypi.org", "1.1.1.1"}, {"0.0.0.0/0"});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ(p->allow_domains, (std::vector<std::string>{"example.com", "*.pypi.org"}));
  EXPECT_TRUE(p->HasDomains());
  EXPECT_FALSE(p->IsDefault());
  os::Ipv4 elsewhere = *os::ParseIpv4("9.9.9.9");
  EXPECT_TRUE(p->Allows(elsewhere, "example.com"));
  EXPECT_FALSE(p->Allows(elsewhere, "www.example.com")) << "a plain domain is that name only";
  EXPECT_TRUE(p->Allows(elsewhere, "files.pypi.org"));
  EXPECT_TRUE(p->Allows(elsewhere, "a.b.pypi.org"));
  EXPECT_FALSE(p->Allows(elsewhere, "pypi.org")) << "a wildcard is its subdomains";
  EXPECT_FALSE(p->Allows(elsewhere, "evilpypi.org"));
  EXPECT_FALSE(p->Allows(elsewhere, "")) << "no name: addresses decide";
  EXPECT_TRUE(p->Allows(*os::ParseIpv4("1.1.1.1"), "")) << "allowed addresses need no name";
  // Without a deny, a domain changes nothing; allowInternetAccess false denies the rest.
  EXPECT_TRUE(MakeEgressPolicy(true, {"example.com"}, {})->Allows(elsewhere, "other.test"));
  auto closed = MakeEgressPolicy(false, {"example.com"}, {});
  EXPECT_FALSE(closed->Allows(elsewhere, "other.test"));
  EXPECT_TRUE(closed->Allows(elsewhere, "example.com"));
  // The JSON form keeps them in allowOut.
  EXPECT_EQ(EgressPolicyToJson(*p)["allowOut"].dump(),
            R"(["1.1.1.1/32","example.com","*.pypi.org"])");
  EXPECT_EQ(EgressPolicyFromJson(EgressPolicyToJson(*p))->allow_domains, p->allow_domains);
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
