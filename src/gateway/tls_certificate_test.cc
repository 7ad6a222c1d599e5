#include "gateway/tls_certificate.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "base/small_file.h"
#include "base/testing/temp_dir.h"

namespace warren::gateway {
namespace {

mode_t ModeOf(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 0777;
}

TEST(TlsCertificateTest, TheCaIsMadeOnceAndTheLeafFollowsTheDomain) {
  base::testing::TempDir dir;
  std::string tls = dir.path() + "/tls";
  auto first = EnsureWarrenCertificate(tls, "sbx.example.test");
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->ca_created);
  EXPECT_EQ(first->ca, tls + "/ca.crt");
  EXPECT_EQ(ModeOf(tls + "/ca.key"), 0600u);
  EXPECT_EQ(ModeOf(tls + "/gateway.key"), 0600u);
  std::string ca = base::ReadSmallFile(tls + "/ca.crt").value();
  std::string leaf = base::ReadSmallFile(tls + "/gateway.crt").value();
  EXPECT_NE(leaf.find(ca), std::string::npos) << "the chain carries the CA after the leaf";

  // A restart: nothing is made again, so clients keep trusting what they trust.
  auto again = EnsureWarrenCertificate(tls, "sbx.example.test");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->ca_created);
  EXPECT_EQ(base::ReadSmallFile(tls + "/ca.crt").value(), ca);
  EXPECT_EQ(base::ReadSmallFile(tls + "/gateway.crt").value(), leaf);

  // Another domain: a new leaf from the same CA.
  auto moved = EnsureWarrenCertificate(tls, "other.test");
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_FALSE(moved->ca_created);
  EXPECT_EQ(base::ReadSmallFile(tls + "/ca.crt").value(), ca);
  EXPECT_NE(base::ReadSmallFile(tls + "/gateway.crt").value(), leaf);
  // And it is good for that domain as an operator's certificate would be checked.
  EXPECT_TRUE(
      CheckOperatorCertificate(tls + "/gateway.crt", tls + "/gateway.key", "other.test").ok());
}

TEST(TlsCertificateTest, AnOperatorsCertificateIsCheckedBeforeItIsServed) {
  base::testing::TempDir dir;
  std::string a = dir.path() + "/a";
  std::string b = dir.path() + "/b";
  ASSERT_TRUE(EnsureWarrenCertificate(a, "sbx.example.test").ok());
  ASSERT_TRUE(EnsureWarrenCertificate(b, "sbx.example.test").ok());

  auto wrong_domain = CheckOperatorCertificate(a + "/gateway.crt", a + "/gateway.key", "x.test");
  EXPECT_EQ(wrong_domain.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_domain.status().message().find("does not name *.x.test"), std::string::npos)
      << wrong_domain.status();
  auto wrong_key =
      CheckOperatorCertificate(a + "/gateway.crt", b + "/gateway.key", "sbx.example.test");
  EXPECT_NE(wrong_key.status().message().find("is not the key of"), std::string::npos)
      << wrong_key.status();
  auto not_pem =
      CheckOperatorCertificate(a + "/gateway.key", a + "/gateway.key", "sbx.example.test");
  EXPECT_NE(not_pem.status().message().find("not a PEM certificate"), std::string::npos)
      << not_pem.status();
  auto missing = CheckOperatorCertificate(a + "/nope.crt", a + "/gateway.key", "sbx.example.test");
  EXPECT_NE(missing.status().message().find("--tls-cert"), std::string::npos) << missing.status();
}

TEST(TlsCertificateTest, ADomainMustBeAbleToCarryAWildcard) {
  EXPECT_TRUE(CheckSandboxDomain("sbx.example.test").ok());
  EXPECT_TRUE(CheckSandboxDomain("warren.test").ok());
  for (std::string_view bad :
       {"", "localhost", "a..b", ".a.b", "a.b.", "-a.b", "a_b.test", "a b.test", "*.test"}) {
    Status s = CheckSandboxDomain(bad);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(s.message().find("--domain"), std::string::npos) << s;
  }
  base::testing::TempDir dir;
  EXPECT_EQ(EnsureWarrenCertificate(dir.path() + "/tls", "localhost").status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warren::gateway
