#include "node/volume_agent.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <thread>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "base/clock.h"
#include "base/testing/temp_dir.h"
#include "node/sandbox_files.h"
#include "node/sandbox_paths.h"
#include "store/testing/temp_store.h"

namespace warren::node {
namespace {

using namespace std::chrono_literals;

bool Eventually(const std::function<bool()>& fn) {
  for (auto deadline = std::chrono::steady_clock::now() + 10s;
       std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(10ms)) {
    if (fn()) return true;
  }
  return false;
}

bool Exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// The agent over a real store and an unenforced sandbox storage (plain directories: no root,
// no btrfs needed; the enforced size is tested end to end in tests/e2e/sdk/volumes.test.mjs).
class VolumeAgentTest : public ::testing::Test {
 protected:
  VolumeAgentTest() {
    StorageOptions so;
    so.enforce = false;
    storage_ = SandboxStorage::Open(root_.path(), so);
    EXPECT_TRUE(MakeDirs(storage_->sandboxes_dir()).ok());
  }

  std::unique_ptr<VolumeAgent> MakeAgent() {
    return std::make_unique<VolumeAgent>(
        store_.store(), *storage_, base::RealClock(),
        VolumeAgentOptions{"node-a", SandboxPaths::VolumesDir(root_.path()), getuid()});
  }

  api::Object CreateVolume(const std::string& name) {
    api::Object v;
    v.api_version = api::VolumeKind().ApiVersion();
    v.kind = "Volume";
    v.metadata.namespace_ = "team";
    v.metadata.name = name;
    v.spec()["size"] = "16Mi";
    auto created = store_->Create(std::move(v));
    EXPECT_TRUE(created.ok()) << created.status().ToString();
    return *created;
  }

  api::VolumeStatus StatusOf(const std::string& name) {
    auto v = store_->Get(api::VolumeKind(), "team", name);
    if (!v.ok()) return {};
    return api::DecodeStatus<api::VolumeStatus>(*v).value_or(api::VolumeStatus{});
  }

  base::testing::TempDir root_;
  store::testing::TempStore store_;
  std::unique_ptr<SandboxStorage> storage_;
};

TEST_F(VolumeAgentTest, AVolumeIsRemovedOnlyOnceNoSandboxMountsIt) {
  auto agent = MakeAgent();
  ASSERT_TRUE(agent->Start().ok());
  const api::Object vol = CreateVolume("work");
  auto dir = agent->Attach("team", "work", "sbx1");
  ASSERT_TRUE(dir.ok()) << dir.status().ToString();
  EXPECT_EQ(*dir, SandboxPaths::VolumesDir(root_.path()) + "/" + vol.metadata.uid);
  struct stat st;
  ASSERT_EQ(stat(dir->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0777u) << "writable by the sandbox's unprivileged users";
  EXPECT_TRUE(Eventually([&] {
    api::VolumeStatus s = StatusOf("work");
    return s.phase == "Available" && s.mounted_by == std::vector<std::string>{"sbx1"};
  }));
  EXPECT_FALSE(StatusOf("work").size_enforced);
  EXPECT_NE(StatusOf("work").message.find("not enforced"), std::string::npos);

  ASSERT_TRUE(store_->Delete(api::VolumeKind(), "team", "work", {}).ok());
  EXPECT_TRUE(Eventually([&] { return StatusOf("work").phase == "Terminating"; }));
  EXPECT_NE(StatusOf("work").message.find("mounted by sandbox sbx1"), std::string::npos)
      << StatusOf("work").message;
  auto refused = agent->Attach("team", "work", "sbx2");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(refused.status().message().find("is being deleted"), std::string::npos);
  EXPECT_TRUE(Exists(*dir)) << "the data stays while a sandbox mounts it";

  agent->Detach("sbx1");
  EXPECT_TRUE(Eventually([&] {
    return store_->Get(api::VolumeKind(), "team", "work").status().code() == StatusCode::kNotFound;
  }));
  EXPECT_FALSE(Exists(*dir));
}

TEST_F(VolumeAgentTest, AMissingVolumeIsNamed) {
  auto agent = MakeAgent();
  ASSERT_TRUE(agent->Start().ok());
  auto r = agent->Attach("team", "nothing", "sbx1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(r.status().message(), "volume \"nothing\" not found in namespace \"team\"");
  EXPECT_TRUE(agent->MountedBy("team", "nothing").empty());
}

TEST_F(VolumeAgentTest, TheSweepRemovesGoneVolumesDataButKeepsWhatAnAdoptedSandboxMounts) {
  const std::string volumes = SandboxPaths::VolumesDir(root_.path());
  ASSERT_TRUE(MakeDirs(volumes + "/gone-uid").ok());
  ASSERT_TRUE(MakeDirs(volumes + "/kept-uid").ok());
  ASSERT_TRUE(MakeDirs(volumes + "/.half-made.new").ok());
  const api::Object live = CreateVolume("live");
  ASSERT_TRUE(MakeDirs(volumes + "/" + live.metadata.uid).ok());
  auto agent = MakeAgent();
  agent->Restore("sbx-adopted", {"team/deleted-meanwhile"}, {volumes + "/kept-uid"});
  ASSERT_TRUE(agent->Start().ok());
  EXPECT_FALSE(Exists(volumes + "/gone-uid"));
  EXPECT_FALSE(Exists(volumes + "/.half-made.new"));
  EXPECT_TRUE(Exists(volumes + "/kept-uid"));
  EXPECT_TRUE(Exists(volumes + "/" + live.metadata.uid));
  EXPECT_EQ(agent->MountedBy("team", "deleted-meanwhile"), std::vector<std::string>{"sbx-adopted"});
}

}  // namespace
}  // namespace warren::node
