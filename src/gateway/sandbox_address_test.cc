#include "gateway/sandbox_address.h"

#include <gtest/gtest.h>

namespace warren::gateway {
namespace {

Result<SandboxAddress> Parse(std::optional<std::string_view> id,
                             std::optional<std::string_view> port,
                             std::optional<std::string_view> host, std::string_view domain = "") {
  return ParseSandboxAddress(RoutingFields{id, port, host}, domain);
}

TEST(SandboxAddressTest, HeadersComeFirstAndThePortDefaultsToEnvd) {
  auto a = Parse("iabc123", std::nullopt, "3000-iother.sbx.test");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->sandbox_id, "iabc123");
  EXPECT_EQ(a->port, kEnvdPort);
  EXPECT_FALSE(a->from_host);

  auto b = Parse("debug_sandbox_id", " 8080 ", std::nullopt);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->sandbox_id, "debug_sandbox_id");
  EXPECT_EQ(b->port, 8080);
}

TEST(SandboxAddressTest, BadHeadersAreRejectedNamingTheHeader) {
  for (std::string_view port : {"", "0", "65536", "80a", "-1", "123456", "1.5"}) {
    auto a = Parse("iabc", port, std::nullopt);
    ASSERT_FALSE(a.ok()) << port;
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find("E2b-Sandbox-Port header"), std::string::npos)
        << a.status();
  }
  for (std::string_view id : {"", "a b", "i/../x", "i\r\nx", "ié"}) {
    auto a = Parse(id, std::nullopt, std::nullopt);
    ASSERT_FALSE(a.ok()) << id;
    EXPECT_NE(a.status().message().find("E2b-Sandbox-Id header"), std::string::npos) << a.status();
    EXPECT_EQ(a.status().message().find('\r'), std::string::npos) << "control bytes echoed";
  }
  std::string long_id(200, 'a');
  auto a = Parse(long_id, std::nullopt, std::nullopt);
  ASSERT_FALSE(a.ok());
  EXPECT_LT(a.status().message().size(), 200u) << "the whole value was echoed back";
}

TEST(SandboxAddressTest, HostFormRoutesByPortAndId) {
  auto a = Parse(std::nullopt, std::nullopt, "49983-iabcdefghij0123456789.sbx.test:7781");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->sandbox_id, "iabcdefghij0123456789");
  EXPECT_EQ(a->port, 49983);
  EXPECT_TRUE(a->from_host);

  // Case-insensitive, ids with dashes (OpenKruise's "<ns>--<name>"), any domain by default.
  auto b = Parse(std::nullopt, std::nullopt, "8080-Default--Sbx-A.Example.COM");
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ(b->sandbox_id, "default--sbx-a");
  EXPECT_EQ(b->port, 8080);

  // A port header without the id header does not route by itself.
  auto c = Parse(std::nullopt, "3000", "5000-iabc.localhost");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->port, 5000);
}

TEST(SandboxAddressTest, DomainIsEnforcedWhenConfigured) {
  EXPECT_TRUE(Parse(std::nullopt, std::nullopt, "80-iabc.sbx.test", "sbx.test").ok());
  EXPECT_TRUE(Parse(std::nullopt, std::nullopt, "80-iabc.SBX.test:443", "sbx.test").ok());
  auto a = Parse(std::nullopt, std::nullopt, "80-iabc.other.test", "sbx.test");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("with domain sbx.test"), std::string::npos) << a.status();
}

TEST(SandboxAddressTest, NeitherHeaderNorMatchingHostSaysWhatIsMissing) {
  for (std::optional<std::string_view> host :
       {std::optional<std::string_view>(), std::optional<std::string_view>("")}) {
    auto a = Parse(std::nullopt, std::nullopt, host);
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(a.status().message().find("E2b-Sandbox-Id"), std::string::npos) << a.status();
    EXPECT_NE(a.status().message().find("<port>-<sandboxId>.<domain>"), std::string::npos);
  }
  for (std::string_view host :
       {"localhost:7781", "127.0.0.1", "[::1]:7781", "sandbox.sbx.test", "api.sbx.test",
        "abc-iabc.sbx.test", "-iabc.sbx.test", "80-.sbx.test", "80-iabc.", "80-iabc"}) {
    auto a = Parse(std::nullopt, std::nullopt, host);
    ASSERT_FALSE(a.ok()) << host;
    EXPECT_NE(a.status().message().find("Host \""), std::string::npos) << a.status();
  }
  auto big = Parse(std::nullopt, std::nullopt, "70000-iabc.sbx.test");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.status().message().find("not a port number"), std::string::npos) << big.status();
  auto bad_id = Parse(std::nullopt, std::nullopt, "80-i_a%b.sbx.test");
  ASSERT_FALSE(bad_id.ok());
  EXPECT_NE(bad_id.status().message().find("not a valid sandbox id"), std::string::npos)
      << bad_id.status();
}

}  // namespace
}  // namespace warren::gateway
