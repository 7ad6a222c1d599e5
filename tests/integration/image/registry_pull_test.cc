// Pulls from a real docker-registry on 127.0.0.1 into the store.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <future>
#include <map>

#include "image/commands.h"
#include "image/image_store.h"
#include "image/pull_meter.h"
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

TEST_F(RegistryPullTest, TellsOfEachLayerInOrderAndTheMeterEndsWhole) {
  std::string ref = registry_->address() + "/team/app:1";
  using Step = PullProgress::Step;
  std::map<size_t, std::vector<Step>> steps;
  std::vector<std::string> lines;
  PullMeter meter;
  auto record = store_->Pull(ref, {.on_pull_progress = [&](const PullProgress& p) {
                               steps[p.layer].push_back(p.step);
                               meter.Add(p);
                               if (auto line = PullProgressText(p); !line.empty()) {
                                 lines.push_back(line);
                               }
                             }});
  ASSERT_TRUE(record.ok()) << record.status();
  ASSERT_EQ(steps.size(), 2u);
  for (auto& [layer, seen] : steps) {
    std::erase(seen, Step::kLayerBytes);  // as many as the transfer's chunks
    EXPECT_EQ(seen, (std::vector<Step>{Step::kLayerDownloading, Step::kLayerDownloaded,
                                       Step::kUnpacking, Step::kLayerUnpacked}))
        << "layer " << layer;
  }
  EXPECT_EQ(meter.percent(), 100);
  EXPECT_EQ(meter.layers_done(), 2u);
  EXPECT_EQ(meter.bytes_total(), base_.size + top_.size);
  EXPECT_THAT(meter.Bar(10), HasSubstr("[##########] 100%"));
  ASSERT_EQ(lines.size(), 4u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines, ::testing::Contains(::testing::MatchesRegex(
                         "layer 1/2 " + base_.digest.Short() + " .*: downloaded in [0-9.]+s\n")));

  // Again: every layer is here already.
  lines.clear();
  ASSERT_TRUE(
      store_
          ->Pull(ref, {.name = "app:2",
                       .on_pull_progress =
                           [&](const PullProgress& p) { lines.push_back(PullProgressText(p)); }})
          .ok());
  ASSERT_EQ(lines.size(), 2u) << ::testing::PrintToString(lines);
  EXPECT_THAT(lines, ::testing::Contains("layer 1/2 " + base_.digest.Short() + " " +
                                         HumanSize(static_cast<uint64_t>(base_.size)) +
                                         ": already here\n"));
}

TEST_F(RegistryPullTest, ConcurrentPullsOfOneImageFetchEachLayerOnce) {
  std::string ref = registry_->address() + "/team/app:1";
  std::atomic<int> downloads{0};
  auto pull = [&](std::string name) {
    return store_->Pull(ref,
                        {.name = std::move(name), .on_pull_progress = [&](const PullProgress& p) {
                           if (p.step == PullProgress::Step::kLayerDownloading) ++downloads;
                         }});
  };
  std::vector<Result<ImageRecord>> results;
  {
    std::vector<std::future<Result<ImageRecord>>> pulls;
    for (int i = 0; i < 4; ++i) {
      pulls.push_back(std::async(std::launch::async, pull, "copy:" + std::to_string(i)));
    }
    for (auto& f : pulls) results.push_back(f.get());
  }
  for (const auto& r : results) ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(downloads.load(), 2);
  EXPECT_EQ(store_->layers_unpacked(), 2u);
  EXPECT_EQ(store_->List().size(), 4u);
}

TEST_F(RegistryPullTest, APullPastItsDeadlineOrCancelledLeavesNothing) {
  std::string ref = registry_->address() + "/team/app:1";
  auto late = store_->Pull(ref, {.deadline = std::chrono::steady_clock::now()});
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.status().code(), StatusCode::kDeadlineExceeded) << late.status();
  EXPECT_THAT(late.status().message(), HasSubstr("time ran out"));
  std::atomic<bool> cancel{true};
  auto cancelled = store_->Pull(ref, {.cancel = &cancel});
  ASSERT_FALSE(cancelled.ok());
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled) << cancelled.status();
  EXPECT_TRUE(store_->List().empty());
  EXPECT_TRUE(store_->ListLayers().empty());
  EXPECT_TRUE(std::filesystem::is_empty(tmp_.Sub("store/staging")));
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
