// The cgroup v2 path, as far as this hybrid host allows: /sys/fs/cgroup/unified has no
// controllers enabled (they are bound to v1), but placement (CLONE_INTO_CGROUP), cgroup.freeze,
// cgroup.kill and cpu.stat work there. Limits need controllers and must fail cleanly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <thread>

#include "base/small_file.h"
#include "base/strings.h"
#include "os/cgroup.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

class CgroupV2Test : public SandboxTest {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    auto v2 = os::CgroupHierarchies::Detect(os::CgroupVersion::kV2);
    if (!v2.ok()) GTEST_SKIP() << "no cgroup2 mount: " << v2.status();
    unified_ = v2->unified;
    rt_.reset();
    native::NativeRuntimeOptions o = Options();
    o.cgroup_version = os::CgroupVersion::kV2;
    auto rt = native::NativeRuntime::Create(o);
    ASSERT_TRUE(rt.ok()) << rt.status();
    rt_ = std::move(rt).value();
  }
  std::string Dir(const std::string& id) const {
    return unified_ + "/" + cgroup_parent_ + "/" + id;
  }
  std::string unified_;
};

TEST_F(CgroupV2Test, PlacesFreezesAndMeasuresASandbox) {
  ASSERT_OK(rt_->Create(ShellSpec("v2", "cat /proc/self/cgroup; while :; do :; done")));
  ASSERT_OK(rt_->Start("v2"));
  auto pid = rt_->Pid("v2");
  ASSERT_TRUE(pid.ok());
  auto procs = base::ReadSmallFile(Dir("v2") + "/cgroup.procs");
  ASSERT_TRUE(procs.ok()) << procs.status();
  EXPECT_THAT(*procs, HasSubstr(std::to_string(*pid))) << "born in its cgroup";

  std::this_thread::sleep_for(300ms);
  auto a = rt_->Stats("v2");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_GT(a->cpu_usage_ns, 0u) << "cpu.stat works without the cpu controller";
  EXPECT_GE(a->pids, 1u);
  ASSERT_OK(rt_->Pause("v2"));
  auto events = base::ReadSmallFile(Dir("v2") + "/cgroup.events");
  ASSERT_TRUE(events.ok());
  EXPECT_THAT(*events, HasSubstr("frozen 1"));
  uint64_t frozen = rt_->Stats("v2")->cpu_usage_ns;
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(rt_->Stats("v2")->cpu_usage_ns, frozen);
  ASSERT_OK(rt_->Resume("v2"));
  std::this_thread::sleep_for(300ms);
  EXPECT_GT(rt_->Stats("v2")->cpu_usage_ns, frozen);
  // The sandbox sees the root of its own cgroup namespace.
  EXPECT_THAT(ReadLog("v2"), HasSubstr("0::/\n"));

  ASSERT_OK(rt_->Pause("v2"));
  ASSERT_OK(rt_->Destroy("v2"));
  struct stat st;
  EXPECT_NE(stat(Dir("v2").c_str(), &st), 0);
}

TEST_F(CgroupV2Test, LimitsWithoutControllersFailCleanlyNamingTheController) {
  SandboxSpec spec = ShellSpec("v2mem", "true");
  spec.resources.memory_bytes = 64 << 20;
  Status st = rt_->Create(spec);
  auto controllers = base::ReadSmallFile(unified_ + "/cgroup.controllers");
  ASSERT_TRUE(controllers.ok());
  if (std::string(base::TrimSpace(*controllers)).find("memory") != std::string::npos) {
    GTEST_SKIP() << "this host delegates the memory controller to cgroup v2";
  }
  EXPECT_EQ(st.code(), StatusCode::kFailedPrecondition) << st;
  EXPECT_THAT(st.message(), HasSubstr("controller 'memory'"));
  struct stat sst;
  EXPECT_NE(stat(Dir("v2mem").c_str(), &sst), 0) << "the cgroup made before the failure is gone";
  EXPECT_NE(stat((state_dir_ + "/v2mem").c_str(), &sst), 0);
  EXPECT_NE(stat(spec.writable_dir.c_str(), &sst), 0);
}

}  // namespace
}  // namespace warren::runtime::testing
