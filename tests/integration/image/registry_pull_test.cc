// Pulls from a real docker-registry on 127.0.0.1 into the store.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "image/commands.h"
#include "image/image_store.h"
#include "image/testing/oci_builder.h"
#include "image/testing/registry_fixture.h"

namespace warren::image {
namespace {

using ::testing::HasSubstr;
using ::warren::image::testing::OciLayoutBuilder;
using ::warren::image::testing::PushLayout;
using ::warren::image::testing::ReadFile;
using ::warren::image::testing::RegistryProcess;
using ::warren::image::testing::TarEntry;
using ::warren::image::testing::TempDir;
using ::warren::image::testing::WriteFile;

class RegistryPullTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/docker-registry")) {
      GTEST_SKIP() << "docker-registry is not installed (scripts/install-deps)";
    }
    std::filesystem::create_directories(tmp_.Sub("registry"));
    auto registry = RegistryProcess::Start(tmp_.Sub("registry"));
    ASSERT_TRUE(registry.ok()) << registry.status();
    registry_ = std::move(registry).value();
    ImageStoreOptions options;
    options.root = tmp_.Sub("store");
    options.allowed_registries = *RegistryAllowlist::Parse(registry_->address() + ",127.0.0.1:1");
    store_ = std::move(ImageStore::Open(options)).value();

    OciLayoutBuilder b(tmp_.Sub("layout"));
    base_ = b.AddLayer({TarEntry::Dir("etc"), TarEntry::File("etc/os-release", "ID=pulled\n")},
                       LayerCompression::kZstd);
    top_ = b.AddLayer({TarEntry::File("app", "v1"), TarEntry::Whiteout("etc/os-release")});
    ImageConfig config;
    config.cmd = {"/app"};
    b.AddImage({base_, top_}, config, "app:1");
    b.WriteIndex();
    ASSERT_TRUE(PushLayout(registry_->address(), "team/app", "1", b.dir()).ok());
  }

  TempDir tmp_;
  std::unique_ptr<RegistryProcess> registry_;
  std::unique_ptr<ImageStore> store_;
  Descriptor base_, top_;
};

TEST_F(RegistryPullTest, PullsAndImportsOnlyWhatIsMissing) {
  std::string ref = registry_->address() + "/team/app:1";
  auto record = store_->Pull(ref);
  ASSERT_TRUE(record.ok()) << record.status();
  EXPECT_EQ(record->name, ref);
  EXPECT_EQ(record->config.cmd, std::vector<std::string>{"/app"});
  auto resolved = store_->Resolve(ref);
  ASSERT_TRUE(resolved.ok());
  EXPECT_EQ(ReadFile(resolved->lower_dirs[0] + "/etc/os-release"), "ID=pulled\n");
  EXPECT_EQ(ReadFile(resolved->lower_dirs[1] + "/app"), "v1");
  EXPECT_EQ(store_->layers_unpacked(), 2u);

  // Pulled again under a local name: nothing new is unpacked.
  auto again = store_->Pull(ref, {.name = "app:local"});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(store_->layers_unpacked(), 2u);
  EXPECT_EQ(again->manifest_digest, record->manifest_digest);
}

TEST_F(RegistryPullTest, TellsOfEachLayerAndTheUnpacking) {
  std::string ref = registry_->address() + "/team/app:1";
  std::vector<std::string> lines;
  auto record = store_->Pull(ref, {.on_pull_progress = [&](const PullProgress& p) {
                               lines.push_back(PullProgressText(p));
                             }});
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(lines.size(), 5u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "layer 1/2 " + base_.digest.Short() + " " +
                          HumanSize(static_cast<uint64_t>(base_.size)) + ": downloading...");
  EXPECT_THAT(lines[1], ::testing::MatchesRegex(" done in [0-9]+\\.[0-9]s\n"));
  EXPECT_THAT(lines[2], HasSubstr("layer 2/2 " + top_.digest.Short()));
  EXPECT_EQ(lines[4], "unpacking...\n");

  // Again: every layer is here already.
  lines.clear();
  ASSERT_TRUE(
      store_
          ->Pull(ref, {.name = "app:2",
                       .on_pull_progress =
                           [&](const PullProgress& p) { lines.push_back(PullProgressText(p)); }})
          .ok());
  ASSERT_EQ(lines.size(), 3u) << ::testing::PrintToString(lines);
  EXPECT_EQ(lines[0], "layer 1/2 " + base_.digest.Short() + " " +
                          HumanSize(static_cast<uint64_t>(base_.size)) + ": already here\n");
}

TEST_F(RegistryPullTest, UnknownTagIsNotFound) {
  auto record = store_->Pull(registry_->address() + "/team/app:nope");
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), StatusCode::kNotFound);
}

TEST_F(RegistryPullTest, ACorruptBlobInTheRegistryIsRejected) {
  // Flip the registry's stored copy of the top layer: it still serves it, under the old digest.
  std::string path = registry_->BlobDataPath(top_.digest.hex());
  std::string bytes = ReadFile(path);
  bytes[bytes.size() / 2] ^= 0x55;
  WriteFile(path, bytes);
  auto record = store_->Pull(registry_->address() + "/team/app:1");
  ASSERT_FALSE(record.ok());
  EXPECT_EQ(record.status().code(), StatusCode::kDataLoss);
  EXPECT_THAT(record.status().message(), HasSubstr("hashing to"));
  EXPECT_TRUE(store_->List().empty());
  EXPECT_TRUE(std::filesystem::is_empty(tmp_.Sub("store/staging")));
}

TEST_F(RegistryPullTest, NoRegistryInTheNameOrNoneListening) {
  EXPECT_EQ(store_->Pull("app:1").status().code(), StatusCode::kInvalidArgument);
  auto down = store_->Pull("127.0.0.1:1/team/app:1");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace warren::image
