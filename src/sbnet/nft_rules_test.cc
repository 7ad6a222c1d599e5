#include "sbnet/nft_rules.h"

#include <gtest/gtest.h>

namespace warren::sbnet {
namespace {

RulesetConfig Config() {
  RulesetConfig c;
  c.range = *os::ParseIpv4Prefix("10.213.0.0/16");
  c.table = TableName(c.range);
  c.resolvers = {*os::ParseIpv4("8.8.8.8")};
  return c;
}

TEST(NftRulesTest, EachRangeHasATableOfItsOwn) {
  EXPECT_EQ(TableName(*os::ParseIpv4Prefix("10.213.5.1/16")), "warren_10_213_0_0_16");
}

TEST(NftRulesTest, TheBaseRulesetReplacesTheTableAndNamesTheRangeAndResolvers) {
  std::string s = BaseRuleset(Config());
  EXPECT_TRUE(
      s.starts_with("table inet warren_10_213_0_0_16 {}\ndelete table inet "
                    "warren_10_213_0_0_16\n"));
  EXPECT_NE(s.find("ip saddr 10.213.0.0/16 jump from_sandbox"), std::string::npos);
  EXPECT_NE(s.find("ip saddr 10.213.0.0/16 oifname != \"wv*\" masquerade"), std::string::npos);
  EXPECT_NE(s.find("elements = { 8.8.8.8 }"), std::string::npos);
  EXPECT_NE(s.find("169.254.0.0/16"), std::string::npos) << "metadata addresses are blocked";
}

TEST(NftRulesTest, APolicyChecksAllowOutBeforeDenyOutAndNoInternetDeniesEverything) {
  auto c = Config();
  auto ip = *os::ParseIpv4("10.213.0.2");
  auto p = *MakeEgressPolicy(false, {"1.1.1.1"}, {"9.9.9.9"});
  std::string s = PolicyCommands(c, ip, p, false);
  size_t allow = s.find("ip daddr { 1.1.1.1 } accept");
  size_t deny = s.find("ip daddr { 0.0.0.0/0 } drop");
  ASSERT_NE(allow, std::string::npos) << s;
  ASSERT_NE(deny, std::string::npos) << s;
  EXPECT_LT(allow, deny);
  EXPECT_NE(s.find("policies { 10.213.0.2 : jump sandbox_0ad50002 }"), std::string::npos);
  EXPECT_EQ(s.find("delete"), std::string::npos) << "nothing to remove the first time";

  std::string again = PolicyCommands(c, ip, *MakeEgressPolicy(true, {}, {}), true);
  EXPECT_EQ(again, RemovePolicyCommands(c, ip)) << "a default policy only removes";
}

TEST(NftRulesTest, DomainRulesSendPorts80And443ToTheProxyAndKeepTheResolversOpen) {
  auto c = Config();
  EXPECT_EQ(BaseRuleset(c).find("redirect"), std::string::npos) << "no proxy, no redirect";
  c.http_proxy_port = 4080;
  c.tls_proxy_port = 4443;
  std::string base = BaseRuleset(c);
  EXPECT_NE(base.find("ip saddr @proxied tcp dport 80 ct mark set 0x77617272 redirect to :4080"),
            std::string::npos)
      << base;
  EXPECT_NE(base.find("ip saddr @proxied tcp dport 443 ct mark set 0x77617272 redirect to :4443"),
            std::string::npos);
  // Admitted by the mark, so another range's table (same rule) does not drop it either.
  size_t admit = base.find("iifname \"wv*\" ct mark 0x77617272 ct status dnat accept");
  ASSERT_NE(admit, std::string::npos) << base;
  EXPECT_LT(admit, base.find("iifname \"wv*\" drop")) << "admitted before the input drop";

  auto ip = *os::ParseIpv4("10.213.0.2");
  std::string s =
      PolicyCommands(c, ip, *MakeEgressPolicy(true, {"example.com"}, {"0.0.0.0/0"}), false);
  size_t dns = s.find("ip daddr @resolvers meta l4proto { tcp, udp } th dport 53 accept");
  ASSERT_NE(dns, std::string::npos) << s;
  EXPECT_LT(dns, s.find("ip daddr { 0.0.0.0/0 } drop"));
  EXPECT_NE(s.find("add element inet warren_10_213_0_0_16 proxied { 10.213.0.2 }"),
            std::string::npos);
  EXPECT_NE(RemovePolicyCommands(c, ip).find("delete element inet warren_10_213_0_0_16 proxied"),
            std::string::npos);
  std::string plain =
      PolicyCommands(c, ip, *MakeEgressPolicy(true, {"1.1.1.1"}, {"0.0.0.0/0"}), false);
  EXPECT_EQ(plain.find("proxied"), std::string::npos) << "addresses only: no proxy";
}

}  // namespace
}  // namespace warren::sbnet
