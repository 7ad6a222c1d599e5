#include "image/oci_layout.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "image/image_store.h"
#include "image/testing/oci_builder.h"

namespace warren::image {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

json Entry(const Descriptor& d, const std::string& arch, const std::string& ref) {
  json e = {{"mediaType", d.media_type},
            {"digest", d.digest.ToString()},
            {"size", d.size},
            {"platform", {{"os", "linux"}, {"architecture", arch}}}};
  if (!ref.empty()) e["annotations"] = {{std::string(kAnnotationRefName), ref}};
  return e;
}

class OciLayoutTest : public ::testing::Test {
 protected:
  // Two images in one layout, as a multi-platform or multi-tag export holds them.
  void Build(const std::string& ref_a, const std::string& arch_a, const std::string& ref_b,
             const std::string& arch_b, bool nested) {
    OciLayoutBuilder b(tmp_.path());
    Descriptor la = b.AddLayer({TarEntry::File("which", "a")});
    Descriptor lb = b.AddLayer({TarEntry::File("which", "b")});
    ImageConfig ca, cb;
    ca.architecture = arch_a;
    cb.architecture = arch_b;
    a_ = b.AddImage({la}, ca, "");
    b_ = b.AddImage({lb}, cb, "");
    json manifests = json::array({Entry(a_, arch_a, ref_a), Entry(b_, arch_b, ref_b)});
    json index = {{"schemaVersion", 2}, {"manifests", manifests}};
    if (nested) {
      Descriptor inner = b.AddBlob(index.dump(), std::string(kMediaTypeOciIndex));
      index = {{"schemaVersion", 2},
               {"manifests",
                json::array({{{"mediaType", kMediaTypeOciIndex},
                              {"digest", inner.digest.ToString()},
                              {"size", inner.size},
                              {"annotations", {{"io.containerd.image.name", "multi:1"}}}}})}};
    }
    WriteFile(tmp_.Sub("index.json"), index.dump());
  }

  TempDir tmp_;
  Descriptor a_, b_;
};

TEST_F(OciLayoutTest, PicksTheHostPlatformFromAMultiPlatformIndex) {
  Build("", "arm64", "", "amd64", /*nested=*/true);
  auto layout = OciLayout::Open(tmp_.path());
  ASSERT_TRUE(layout.ok());
  auto selected = layout->Select("");
  ASSERT_TRUE(selected.ok()) << selected.status();
  EXPECT_EQ(selected->manifest_descriptor.digest, b_.digest);
  EXPECT_EQ(selected->name_hint, "multi:1");  // from the outer index's annotation
}

TEST_F(OciLayoutTest, SelectsByNameOrAsksForOne) {
  Build("app:1", "amd64", "app:2", "amd64", /*nested=*/false);
  auto layout = OciLayout::Open(tmp_.path());
  ASSERT_TRUE(layout.ok());
  auto ambiguous = layout->Select("");
  ASSERT_FALSE(ambiguous.ok());
  EXPECT_THAT(ambiguous.status().message(), HasSubstr("holds 2 images (app:1, app:2)"));
  auto two = layout->Select("app:2");
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->manifest_descriptor.digest, b_.digest);
  EXPECT_EQ(layout->Select("app:3").status().code(), StatusCode::kNotFound);

  ImageStoreOptions options;
  options.root = tmp_.Sub("store");
  auto store = std::move(ImageStore::Open(options)).value();
  auto record = store->Import(tmp_.path(), {.name = "app:1"});
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->manifest_digest, a_.digest);
}

TEST_F(OciLayoutTest, NotALayout) {
  auto layout = OciLayout::Open(tmp_.path());
  ASSERT_FALSE(layout.ok());
  EXPECT_THAT(layout.status().message(), HasSubstr("has no index.json"));
}

TEST_F(OciLayoutTest, DockerMediaTypesImport) {
  OciLayoutBuilder b(tmp_.path());
  Descriptor layer = b.AddBlob(testing::BuildTar({TarEntry::File("etc/hostname", "docker\n")}),
                               std::string(kMediaTypeDockerLayerGzip));
  Descriptor config = b.AddBlob(R"({"os":"linux","architecture":"amd64","config":{"Cmd":["sh"]}})",
                                std::string(kMediaTypeDockerConfig));
  json manifest = {{"schemaVersion", 2},
                   {"mediaType", kMediaTypeDockerManifest},
                   {"config",
                    {{"mediaType", config.media_type},
                     {"digest", config.digest.ToString()},
                     {"size", config.size}}},
                   {"layers", json::array({{{"mediaType", layer.media_type},
                                            {"digest", layer.digest.ToString()},
                                            {"size", layer.size}}})}};
  Descriptor m = b.AddBlob(manifest.dump(), std::string(kMediaTypeDockerManifest));
  json index = {
      {"schemaVersion", 2},
      {"manifests", json::array({{{"mediaType", m.media_type},
                                  {"digest", m.digest.ToString()},
                                  {"size", m.size},
                                  {"annotations",
                                   {{"io.containerd.image.name", "docker.io/library/app:1"}}}}})}};
  WriteFile(tmp_.Sub("index.json"), index.dump());
  ImageStoreOptions options;
  options.root = tmp_.Sub("store");
  auto store = std::move(ImageStore::Open(options)).value();
  auto record = store->Import(tmp_.path());
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->name, "docker.io/library/app:1");
  EXPECT_EQ(record->config.cmd, std::vector<std::string>{"sh"});
}

}  // namespace
}  // namespace warren::image
