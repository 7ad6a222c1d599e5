#include "node/image_step.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "image/testing/oci_builder.h"
#include "store/testing/temp_store.h"

namespace warren::node {
namespace {

using image::testing::OciLayoutBuilder;
using image::testing::TarEntry;

// The image step against a real image store and a real object store, no root: a sandbox
// starts on its image, or on a checkpoint of its own namespace, and is refused anything else.
class ImageStepTest : public ::testing::Test {
 protected:
  void SetUp() override {
    image::ImageStoreOptions options;
    options.root = tmp_.Sub("images");
    options.unpack.same_owner = geteuid() == 0;
    auto opened = image::ImageStore::Open(options);
    ASSERT_TRUE(opened.ok()) << opened.status();
    images_ = std::move(opened).value();
    OciLayoutBuilder b(tmp_.Sub("layout"));
    auto layer = b.AddLayer({TarEntry::Dir("etc"), TarEntry::File("etc/os-release", "ID=t\n")});
    b.AddImage({layer}, {}, "app:1");
    b.WriteIndex();
    ASSERT_TRUE(images_->ImportLayout(tmp_.Sub("layout")).ok());
  }

  api::Object Sandbox(const std::string& ns, const std::string& restore_from = "") {
    api::Object o;
    o.api_version = "agents.kruise.io/v1alpha1";
    o.kind = "Sandbox";
    o.metadata.name = "box";
    o.metadata.namespace_ = ns;
    if (!restore_from.empty())
      o.metadata.annotations[api::annotations::kRestoreFrom] = restore_from;
    return o;
  }

  // A Checkpoint in `ns` whose status says `phase` with image `image`.
  void MakeCheckpoint(const std::string& ns, const std::string& name, const std::string& phase,
                      const std::string& image) {
    api::Object cp;
    cp.api_version = "agents.kruise.io/v1alpha1";
    cp.kind = "Checkpoint";
    cp.metadata.name = name;
    cp.metadata.namespace_ = ns;
    cp.spec() = {{"sandboxName", "src"}};
    auto made = store_->Create(cp);
    ASSERT_TRUE(made.ok()) << made.status();
    made->status() = {{"phase", phase}, {"checkpointId", image}, {"message", "disk full"}};
    ASSERT_TRUE(store_->UpdateStatus(*made).ok());
  }

  ImageStepOutcome Step(const api::Object& sandbox, const std::string& image, bool ready = true) {
    return LeaseSandboxImage(store_.store(), *images_, sandbox,
                             {.image = image, .lease_id = "sbx-1", .builtin_images_ready = ready});
  }

  image::testing::TempDir tmp_;
  store::testing::TempStore store_;
  std::unique_ptr<image::ImageStore> images_;
};

TEST_F(ImageStepTest, AnImportedImageIsLeasedAndAnUnknownOneIsNamed) {
  auto ok = Step(Sandbox("team-a"), "app:1");
  ASSERT_TRUE(ok.image) << (ok.failure ? ok.failure->message : "retry");
  EXPECT_EQ(ok.image->lower_dirs.size(), 1u);
  ASSERT_EQ(images_->ListLeases().size(), 1u);
  EXPECT_EQ(images_->ListLeases()[0].id, "sbx-1");

  auto missing = Step(Sandbox("team-a"), "nope:1");
  ASSERT_TRUE(missing.failure);
  EXPECT_EQ(missing.failure->reason, "ImageNotFound");
  EXPECT_NE(missing.failure->message.find("\"nope:1\""), std::string::npos);
  // Before the built-in images are in, a missing one is only "not yet".
  auto early = Step(Sandbox("team-a"), "nope:1", /*ready=*/false);
  EXPECT_FALSE(early.image || early.failure);
}

TEST_F(ImageStepTest, ABuiltinImageWaitsForTheImportThatMayReplaceIt) {
  OciLayoutBuilder b(tmp_.Sub("builtin"));
  auto layer = b.AddLayer({TarEntry::Dir("etc"), TarEntry::File("etc/os-release", "ID=old\n")});
  b.AddImage({layer}, {}, "base:latest");
  b.WriteIndex();
  ASSERT_TRUE(images_->ImportLayout(tmp_.Sub("builtin")).ok());
  // The store has a `base` from before (an earlier build): not used while a newer may come in.
  for (const char* name : {"base", "base:latest"}) {
    auto early = Step(Sandbox("team-a"), name, /*ready=*/false);
    EXPECT_FALSE(early.image || early.failure) << name;
  }
  EXPECT_TRUE(images_->ListLeases().empty());
  // Other images are not held up by the import.
  EXPECT_TRUE(Step(Sandbox("team-a"), "app:1", /*ready=*/false).image);
  ASSERT_TRUE(images_->ReleaseLease("sbx-1").ok());
  auto ready = Step(Sandbox("team-a"), "base");
  ASSERT_TRUE(ready.image) << (ready.failure ? ready.failure->message : "retry");
}

TEST_F(ImageStepTest, ACheckpointImageCannotBeNamedDirectly) {
  auto out = Step(Sandbox("team-a"), "snapshot/0123-uid");
  ASSERT_TRUE(out.failure);
  EXPECT_EQ(out.failure->reason, "InvalidImageName");
  EXPECT_TRUE(images_->ListLeases().empty());
}

TEST_F(ImageStepTest, RestoreFromUsesOnlyASucceededCheckpointOfTheSandboxsNamespace) {
  // The checkpoint's image, as CommitImage would have named it (here: the same layers).
  auto base = images_->Get("app:1");
  ASSERT_TRUE(base.ok());
  MakeCheckpoint("team-a", "snap-a", "Succeeded", "snapshot/uid-a");
  MakeCheckpoint("team-a", "pending", "Creating", "");
  MakeCheckpoint("team-a", "broken", "Failed", "");

  // Another team naming team a's checkpoint finds nothing in its own namespace.
  auto stolen = Step(Sandbox("team-b", "snap-a"), "app:1");
  ASSERT_TRUE(stolen.failure);
  EXPECT_EQ(stolen.failure->reason, "CheckpointNotFound");
  EXPECT_NE(stolen.failure->message.find("team-b/snap-a"), std::string::npos);

  auto pending = Step(Sandbox("team-a", "pending"), "app:1");
  EXPECT_FALSE(pending.image || pending.failure) << "a checkpoint still being made: not yet";
  auto broken = Step(Sandbox("team-a", "broken"), "app:1");
  ASSERT_TRUE(broken.failure);
  EXPECT_NE(broken.failure->message.find("disk full"), std::string::npos);

  // Its own: the step leases the checkpoint's image, not the template's (absent here, so the
  // failure names the checkpoint's image).
  auto own = Step(Sandbox("team-a", "snap-a"), "app:1");
  EXPECT_EQ(own.image_name, "snapshot/uid-a");
  ASSERT_TRUE(own.failure);
  EXPECT_NE(own.failure->message.find("snapshot/uid-a"), std::string::npos);
}

}  // namespace
}  // namespace warren::node
