// The node's half of ImagePullJob (node/image_puller.h) on two "nodes" (two pullers with their
// own image stores, one object store), against a real docker-registry behind a slow relay so
// that pulls overlap: parallelism holds across nodes, and a job deleted mid-pull stops it.

#include "node/image_puller.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/image_pull_job.h"
#include "api/yaml_codec.h"
#include "base/clock.h"
#include "image/image_store.h"
#include "image/testing/oci_builder.h"
#include "image/testing/registry_fixture.h"
#include "image/testing/slow_relay.h"
#include "node/event_recorder.h"
#include "store/testing/temp_store.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;
using image::testing::OciLayoutBuilder;
using image::testing::RegistryProcess;
using image::testing::SlowRelay;
using image::testing::TarEntry;
using image::testing::TempDir;

struct FakeNode {
  std::unique_ptr<image::ImageStore> images;
  std::unique_ptr<EventRecorder> events;
  std::unique_ptr<ImagePuller> puller;
};

class ImagePullerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists("/usr/bin/docker-registry")) GTEST_SKIP() << "no docker-registry";
    std::filesystem::create_directories(tmp_.Sub("registry"));
    registry_ = std::move(RegistryProcess::Start(tmp_.Sub("registry"))).value();
    // One 4 MiB layer of noise at 4 MiB/s: each pull takes about a second.
    std::mt19937 gen(std::random_device{}());
    std::string noise(4 << 20, '\0');
    for (auto& c : noise) c = static_cast<char>(gen());
    OciLayoutBuilder b(tmp_.Sub("layout"));
    auto layer = b.AddLayer({TarEntry::File("noise", noise)}, image::LayerCompression::kNone);
    b.AddImage({layer}, {}, "app:1");
    b.WriteIndex();
    ASSERT_TRUE(image::testing::PushLayout(registry_->address(), "team/app", "1", b.dir()).ok());
    relay_ = std::make_unique<SlowRelay>(registry_->address(), 4 << 20);
    for (const char* name : {"n1", "n2"}) {
      FakeNode n;
      n.images =
          std::move(image::ImageStore::Open({.root = tmp_.Sub(std::string("images-") + name),
                                             .allowed_registries = *image::RegistryAllowlist::Parse(
                                                 relay_->address())}))
              .value();
      n.events = std::make_unique<EventRecorder>(store_.store(), base::RealClock(), "test", name);
      n.puller =
          std::make_unique<ImagePuller>(store_.store(), *n.images, *n.events, base::RealClock(),
                                        ImagePullerOptions{.node_name = name});
      n.puller->Start();
      nodes_.push_back(std::move(n));
    }
  }
  void TearDown() override {
    for (auto& n : nodes_) n.puller->Stop();
  }

  // A job as the controller leaves it: its targets written.
  void CreateJob(const std::string& name, int parallelism) {
    std::string doc =
        "apiVersion: apps.kruise.io/v1alpha1\nkind: ImagePullJob\nmetadata: {name: " + name +
        ", namespace: default}\nspec: {image: \"" + relay_->address() +
        "/team/app:1\", parallelism: " + std::to_string(parallelism) + "}\n";
    auto created = store_->Create(api::ObjectFromJson(*api::ParseYaml(doc)).value());
    ASSERT_TRUE(created.ok()) << created.status();
    api::Object o = *created;
    api::ImagePullJobStatus status;
    status.target_nodes = {"n1", "n2"};
    api::EncodeStatus(status, o);
    ASSERT_TRUE(store_->Update(o, store::Subresource::kStatus).ok());
  }
  api::ImagePullJobStatus StatusOf(const std::string& name) {
    auto o = store_->Get(api::ImagePullJobKind(), "default", name);
    if (!o.ok()) return {};
    return api::DecodeStatus<api::ImagePullJobStatus>(*o).value();
  }

  TempDir tmp_;
  store::testing::TempStore store_;
  std::unique_ptr<RegistryProcess> registry_;
  std::unique_ptr<SlowRelay> relay_;
  std::vector<FakeNode> nodes_;
};

TEST_F(ImagePullerTest, ParallelismOneMeansOneNodeAtATime) {
  CreateJob("one-by-one", 1);
  int most_pulling = 0;
  int succeeded = 0;
  auto deadline = std::chrono::steady_clock::now() + 60s;
  while (succeeded < 2 && std::chrono::steady_clock::now() < deadline) {
    auto st = StatusOf("one-by-one");
    int pulling = 0;
    succeeded = 0;
    for (const auto& n : st.nodes) {
      pulling += n.phase == "Pulling";
      succeeded += n.phase == "Succeeded";
    }
    most_pulling = std::max(most_pulling, pulling);
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(succeeded, 2);
  EXPECT_EQ(most_pulling, 1);
  for (auto& n : nodes_) EXPECT_TRUE(n.images->Get(relay_->address() + "/team/app:1").ok());
}

TEST_F(ImagePullerTest, ParallelismZeroPausesAndADeletedJobStopsItsPull) {
  CreateJob("paused", 0);
  std::this_thread::sleep_for(500ms);
  EXPECT_TRUE(StatusOf("paused").nodes.empty()) << "parallelism 0 pulls nothing";
  ASSERT_TRUE(
      store_->Patch(api::ImagePullJobKind(), "default", "paused", {{"spec", {{"parallelism", 2}}}})
          .ok());
  // Both start; delete the job while their bytes are still coming.
  auto deadline = std::chrono::steady_clock::now() + 30s;
  while (StatusOf("paused").nodes.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  ASSERT_EQ(StatusOf("paused").nodes.size(), 2u);
  ASSERT_TRUE(store_->Delete(api::ImagePullJobKind(), "default", "paused").ok());
  std::this_thread::sleep_for(2500ms);  // longer than a pull would have taken
  for (auto& n : nodes_) {
    EXPECT_FALSE(n.images->Get(relay_->address() + "/team/app:1").ok());
    EXPECT_TRUE(n.images->ListLayers().empty());
  }
}

}  // namespace
}  // namespace warren::node
