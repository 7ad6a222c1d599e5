// The cgroup v1 placement: pid 1 moves itself into its group in every v1 hierarchy (through
// `tasks` files the runtime opened for it) before it builds its root, with and without a user
// namespace, and then sees that group as the root of its cgroup namespace.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "base/small_file.h"
#include "base/strings.h"
#include "os/cgroup.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;

class CgroupV1Test : public SandboxTest, public ::testing::WithParamInterface<bool> {
 protected:
  void SetUp() override {
    SandboxTest::SetUp();
    if (IsSkipped()) return;
    auto h = os::CgroupHierarchies::Detect();
    if (!h.ok() || h->version != os::CgroupVersion::kV1) GTEST_SKIP() << "no cgroup v1 here";
    hierarchies_ = *h;
  }
  os::CgroupHierarchies hierarchies_;
};

TEST_P(CgroupV1Test, PidOneJoinsItsGroupInEveryHierarchyAndSeesItAsRoot) {
  SandboxSpec spec = ShellSpec("v1", "cat /proc/self/cgroup; echo listed; sleep 60");
  spec.user_namespace = GetParam();
  spec.resources.memory_bytes = 64 << 20;
  ASSERT_OK(rt_->Create(spec));
  ASSERT_OK(rt_->Start("v1"));
  auto pid = rt_->Pid("v1");
  ASSERT_TRUE(pid.ok()) << pid.status();

  std::vector<std::string> dirs = hierarchies_.DirsFor(cgroup_parent_ + "/v1");
  ASSERT_FALSE(dirs.empty());
  for (const std::string& dir : dirs) {
    auto procs = base::ReadSmallFile(dir + "/cgroup.procs");
    ASSERT_TRUE(procs.ok()) << procs.status();
    EXPECT_THAT(*procs, HasSubstr(std::to_string(*pid) + "\n")) << dir;
  }
  // Its kernel memory from building the root (mounts, /dev, the overlay) is the sandbox's.
  auto usage = base::ReadSmallFile(hierarchies_.v1.at("memory") + "/" + cgroup_parent_ +
                                   "/v1/memory.usage_in_bytes");
  ASSERT_TRUE(usage.ok()) << usage.status();
  EXPECT_GT(std::stoull(*usage), 0u);

  std::string log;
  for (int i = 0; i < 500 && (log = ReadLog("v1")).find("listed\n") == std::string::npos; ++i) {
    usleep(10'000);
  }
  ASSERT_THAT(log, HasSubstr("listed\n"));
  for (std::string_view controller : os::kV1Controllers) {
    bool seen = false;
    for (std::string_view line : base::Split(log, '\n')) {
      // "4:memory:/" or, co-mounted, "5:cpu,cpuacct:/".
      auto fields = base::Split(line, ':');
      if (fields.size() != 3) continue;
      for (std::string_view c : base::Split(fields[1], ',')) {
        if (c != controller) continue;
        seen = true;
        EXPECT_EQ(fields[2], "/") << "pid 1 sees its " << controller << " group as the root";
      }
    }
    EXPECT_TRUE(seen) << controller << " missing from /proc/self/cgroup:\n" << log;
  }
}

INSTANTIATE_TEST_SUITE_P(UserNamespace, CgroupV1Test, ::testing::Bool(), [](const auto& info) {
  return info.param ? "WithUserns" : "WithoutUserns";
});

}  // namespace
}  // namespace warren::runtime::testing
