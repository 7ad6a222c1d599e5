#include "image/oci.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "image/digest.h"
#include "image/reference.h"
#include "image/safe_fs.h"

namespace warren::image {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr char kDigestA[] =
    "sha256:3b4c932e4ea4d7e96032ba77dabe03aebc96e4f225efbf34bfa96370554d5aa0";
constexpr char kDigestB[] =
    "sha256:ecc150188b52bce4f3f667e5477b2cb5117f708ca391317f1adc02d4fe379e78";

TEST(DigestTest, ParsesOnlyLowercaseSha256) {
  auto d = Digest::Parse(kDigestA);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->ToString(), kDigestA);
  EXPECT_EQ(d->Short(), "3b4c932e4ea4");
  for (const char* bad : {"", "sha256:", "sha512:3b4c",
                          "sha256:3B4C932E4EA4D7E96032BA77DABE03AE"
                          "BC96E4F225EFBF34BFA96370554D5AA0",
                          "sha256:3b4c932e4ea4d7e96032ba77dabe03aebc96e4f225efbf34bfa96370554d5aa",
                          "sha256:../../../../etc/passwd"}) {
    EXPECT_FALSE(Digest::Parse(bad).ok()) << bad;
  }
}

TEST(DigestTest, StreamingHashMatchesTheKnownVector) {
  Sha256Stream hasher;
  hasher.Update("ab");
  hasher.Update("c");
  EXPECT_EQ(hasher.bytes(), 3u);
  EXPECT_EQ(hasher.Finish().hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(ImageRefTest, NormalisesTags) {
  EXPECT_EQ(ParseImageRef("base")->ToString(), "base:latest");
  EXPECT_EQ(ParseImageRef("busybox:1.36")->ToString(), "busybox:1.36");
  auto ref = ParseImageRef("registry.local:5000/team/app:v2");
  ASSERT_TRUE(ref.ok());
  EXPECT_EQ(ref->repository, "registry.local:5000/team/app");
  EXPECT_EQ(ref->tag, "v2");
  EXPECT_EQ(ParseImageRef("localhost/app")->ToString(), "localhost/app:latest");
}

TEST(ImageRefTest, RejectsBadNames) {
  for (const char* bad : {"", "Base", "a b", "../x", "x/../y", "./x", "x:", "x:-tag", "x@sha256:00",
                          "/abs", "x//y", "-x", "x-", "..:5000/x"}) {
    auto ref = ParseImageRef(bad);
    EXPECT_FALSE(ref.ok()) << bad;
    if (!ref.ok()) {
      EXPECT_THAT(ref.status().message(), HasSubstr("image name"));
    }
  }
}

TEST(SplitEntryPathTest, NormalisesAndRejects) {
  EXPECT_THAT(*SplitEntryPath("./usr//bin/"), ElementsAre("usr", "bin"));
  EXPECT_TRUE(SplitEntryPath("./")->empty());
  EXPECT_TRUE(SplitEntryPath(".")->empty());
  EXPECT_THAT(*SplitEntryPath("a/./b"), ElementsAre("a", "b"));
  EXPECT_FALSE(SplitEntryPath("").ok());
  EXPECT_FALSE(SplitEntryPath("/etc/passwd").ok());
  EXPECT_FALSE(SplitEntryPath("..").ok());
  EXPECT_FALSE(SplitEntryPath("a/..").ok());
  EXPECT_FALSE(SplitEntryPath(std::string(300, 'a')).ok());
  EXPECT_FALSE(SplitEntryPath(std::string(5000, '/')).ok());
  EXPECT_EQ(PrintablePath(std::string("a\nb\x01", 4)), "a\\x0ab\\x01");
}

TEST(OciParseTest, ParsesAManifest) {
  std::string text =
      std::string(R"({"schemaVersion":2,"mediaType":")") + std::string(kMediaTypeOciManifest) +
      R"(","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":")" +
      kDigestB + R"(","size":323},"layers":[{"mediaType":")" + std::string(kMediaTypeOciLayerZstd) +
      R"(","digest":")" + kDigestA + R"(","size":65196324}]})";
  auto m = ParseManifest(text, "manifest");
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->config.digest.ToString(), kDigestB);
  ASSERT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(m->layers[0].size, 65196324);
  EXPECT_EQ(*CompressionOfLayer(m->layers[0].media_type), LayerCompression::kZstd);
}

TEST(OciParseTest, ErrorsNameTheProblem) {
  auto bad_json = ParseManifest("{", "manifest X");
  EXPECT_THAT(bad_json.status().message(), HasSubstr("manifest X is not valid JSON"));
  auto no_schema = ParseManifest(R"({"layers":[]})", "m");
  EXPECT_THAT(no_schema.status().message(), HasSubstr("schemaVersion must be 2"));
  auto bad_size = ParseIndex(R"({"schemaVersion":2,"manifests":[{"digest":")" +
                                 std::string(kDigestA) + R"(","size":-1}]})",
                             "index.json");
  EXPECT_THAT(bad_size.status().message(), HasSubstr("no valid size"));
  auto bad_digest =
      ParseIndex(R"({"schemaVersion":2,"manifests":[{"digest":"md5:abc","size":1}]})", "idx");
  EXPECT_THAT(bad_digest.status().message(), HasSubstr("md5:abc"));
  auto bad_layer =
      ParseManifest(R"({"schemaVersion":2,"config":{"digest":")" + std::string(kDigestB) +
                        R"(","size":1},"layers":[{"mediaType":"application/x-rar","digest":")" +
                        kDigestA + R"(","size":1}]})",
                    "m");
  EXPECT_THAT(bad_layer.status().message(), HasSubstr("unsupported layer media type"));
  auto wrong_type = ParseImageConfig(R"({"config":{"Env":"PATH=/bin"}})", "cfg");
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("field 'Env' is not an array"));
}

TEST(OciParseTest, DeepNestingIsRejectedBeforeParsing) {
  std::string deep = std::string(100000, '[') + std::string(100000, ']');
  auto r = ParseIndex(deep, "index.json");
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.status().message(), HasSubstr("nests deeper"));
}

TEST(OciParseTest, ConfigRoundTrips) {
  ImageConfig c;
  c.env = {"A=1", "B=two words"};
  c.entrypoint = {"/bin/sh", "-c"};
  c.cmd = {"echo hi"};
  c.working_dir = "/w";
  c.user = "user";
  c.exposed_ports = {"8080/tcp"};
  c.labels = {{"k", "v"}};
  c.stop_signal = "SIGTERM";
  c.os = "linux";
  c.architecture = "amd64";
  c.created = "2026-12-02T00:00:00Z";
  c.diff_ids = {*Digest::Parse(kDigestA)};
  auto back = ParseImageConfig(ImageConfigToJson(c), "cfg");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(*back, c);
}

}  // namespace
}  // namespace warren::image
