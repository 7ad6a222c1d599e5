// The agent runs image Gc(): a layer collected and later unpacked again at the same path must
// not be served from the runtime's idmapped-mount cache of the deleted directory.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "node_fixture.h"
#include "runtime/native/native_runtime.h"
#include "runtime/testing/busybox_rootfs.h"

namespace warren::node::testing {
namespace {

using namespace std::chrono_literals;

std::string RunCat(runtime::native::NativeRuntime& rt, const std::string& id,
                   const std::string& layer, const std::string& dir) {
  runtime::SandboxSpec spec;
  spec.id = id;
  spec.layers = {layer};
  spec.writable_dir = dir + "/" + id;
  spec.user_namespace = true;
  spec.command = {"/bin/cat", "/marker"};
  spec.log_path = dir + "/" + id + ".log";
  EXPECT_TRUE(rt.Create(spec).ok());
  EXPECT_TRUE(rt.Start(id).ok());
  EXPECT_TRUE(rt.Wait(id, 20s).ok());
  EXPECT_TRUE(rt.Destroy(id).ok());
  std::ifstream log(spec.log_path);
  return std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
}

TEST_F(NodeTest, AReplacedLayerIsNotServedFromTheIdmapCache) {
  runtime::testing::TempDir dir("warren-layer-gc");
  const std::string layer = dir.path() + "/layer";
  ASSERT_OK(runtime::testing::MakeBusyboxLayer(layer));
  { std::ofstream(layer + "/marker") << "first\n"; }
  runtime::native::NativeRuntimeOptions ro;
  ro.state_dir = Options().runtime_state_dir;
  ro.cgroup_parent = Options().cgroup_parent;
  std::filesystem::create_directories(ro.state_dir);
  auto rt = runtime::native::NativeRuntime::Create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status();
  EXPECT_EQ(RunCat(**rt, "igc00000000000000001", layer, dir.path()), "first\n");
  // Collected, then unpacked again at the same path with other content.
  std::filesystem::remove_all(layer);
  ASSERT_OK(runtime::testing::MakeBusyboxLayer(layer));
  { std::ofstream(layer + "/marker") << "second\n"; }
  EXPECT_EQ(RunCat(**rt, "igc00000000000000002", layer, dir.path()), "second\n");
}

}  // namespace
}  // namespace warren::node::testing
