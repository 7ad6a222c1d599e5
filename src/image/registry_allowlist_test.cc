#include "image/registry_allowlist.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warren::image {
namespace {

using ::testing::HasSubstr;

RegistryAllowlist List(std::string_view text) {
  auto list = RegistryAllowlist::Parse(text);
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? *list : RegistryAllowlist();
}

TEST(RegistryAllowlistTest, EmptyAllowsNothing) {
  for (const char* text : {"", "  "}) {
    RegistryAllowlist none = List(text);
    EXPECT_TRUE(none.empty());
    EXPECT_FALSE(none.AllowsRegistry("127.0.0.1:5000"));
    EXPECT_FALSE(none.AllowsHost("localhost", 80));
    EXPECT_EQ(none.ToString(), "none");
  }
  EXPECT_FALSE(RegistryAllowlist().AllowsRegistry("registry.example.com"));
}

TEST(RegistryAllowlistTest, HostPortAndWildcardEntries) {
  RegistryAllowlist list =
      List(" Registry.Example.com , 127.0.0.1:5000,*.mirror.internal,[::1]:8080");
  EXPECT_EQ(list.ToString(), "registry.example.com,127.0.0.1:5000,*.mirror.internal,[::1]:8080");
  // A host alone: any port, any case.
  EXPECT_TRUE(list.AllowsRegistry("registry.example.com"));
  EXPECT_TRUE(list.AllowsRegistry("REGISTRY.example.com:443"));
  EXPECT_TRUE(list.AllowsHost("registry.example.com", 9000));
  EXPECT_FALSE(list.AllowsRegistry("evil.registry.example.com"));
  EXPECT_FALSE(list.AllowsRegistry("registry.example.com.evil"));
  // host:port: that port only; no port means 80.
  EXPECT_TRUE(list.AllowsRegistry("127.0.0.1:5000"));
  EXPECT_FALSE(list.AllowsRegistry("127.0.0.1:5001"));
  EXPECT_FALSE(list.AllowsRegistry("127.0.0.1"));
  EXPECT_FALSE(list.AllowsRegistry("localhost:5000")) << "names are not resolved";
  // *.domain: hosts below it, not the domain itself.
  EXPECT_TRUE(list.AllowsHost("eu.mirror.internal", 443));
  EXPECT_TRUE(list.AllowsHost("a.b.mirror.internal", 80));
  EXPECT_FALSE(list.AllowsHost("mirror.internal", 80));
  EXPECT_FALSE(list.AllowsHost("evilmirror.internal", 80));
  // IPv6 in brackets.
  EXPECT_TRUE(list.AllowsHost("[::1]", 8080));
  EXPECT_FALSE(list.AllowsHost("[::1]", 8081));
}

TEST(RegistryAllowlistTest, BadEntriesAreNamed) {
  for (const char* bad : {"a,,b", "host:0", "host:65536", "host:x", "*.example.com:80", "*.",
                          "http://registry", "reg/istry", "[::1", ".example.com", ":5000"}) {
    auto list = RegistryAllowlist::Parse(bad);
    EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument) << bad;
  }
  EXPECT_THAT(RegistryAllowlist::Parse("ok.example.com, bad/host").status().message(),
              HasSubstr("'bad/host'"));
}

}  // namespace
}  // namespace warren::image
