// Many sandboxes come and go on a node: each one must leave nothing behind — no mount, cgroup,
// namespace, process, fd or directory — whatever state it was destroyed in.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "base/dir_names.h"
#include "base/small_file.h"
#include "census.h"
#include "os/cgroup.h"
#include "os/netns.h"
#include "os/pidfd.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using namespace std::chrono_literals;

TEST_F(SandboxTest, HundredCreateDestroyCyclesLeaveNothingBehind) {
  rt_.reset();
  // This thread keeps an fd of its own network namespace once it has dialed (os/netns.h).
  os::DialInNetnsOfPid(getpid(), 1, 10ms).status().IgnoreError();
  Census before_runtime = TakeCensus(dir_->path());
  auto rt = NewRuntime();
  ASSERT_NE(rt, nullptr);
  std::set<uint64_t> host_ns = NamespaceInodes(getpid());

  std::vector<NamespaceRecord> sandbox_ns;
  std::vector<std::pair<pid_t, uint64_t>> processes;
  Census before;
  for (int i = -2; i < 100; ++i) {
    // Two warm-up rounds (one with a user namespace) fill the caches the runtime keeps for
    // its whole life: the compiled seccomp program, the idmapped layer, this thread's netns fd.
    if (i == 0) before = TakeCensus(dir_->path());
    std::string id = fmt::format("cycle-{}", i + 2);
    SandboxSpec spec = ShellSpec(id, "httpd -f -p 127.0.0.1:8080 -h /");
    spec.user_namespace = (i % 2 != 0);
    spec.resources = Resources{500, 64 << 20, 64};
    spec.log_path.clear();
    ASSERT_OK(rt->Create(spec));
    ASSERT_OK(rt->Start(id));
    auto pid = rt->Pid(id);
    ASSERT_TRUE(pid.ok());
    auto start = os::ProcessStartTime(*pid);
    ASSERT_TRUE(start.ok());
    processes.emplace_back(*pid, *start);
    NamespaceRecord record;
    for (uint64_t ino : NamespaceInodes(*pid)) {
      if (!host_ns.count(ino)) record.inodes.insert(ino);
    }
    if (i % 3 == 0) rt->Dial(id, 8080, 100ms).status().IgnoreError();
    if (i % 5 == 0) ASSERT_OK(rt->Pause(id));
    if (i % 7 == 0) ASSERT_OK(rt->Stop(id, 10ms));
    record.alive_at = TicksSinceBoot();
    ASSERT_OK(rt->Destroy(id));
    // Only after the warm-up: the runtime's own long-lived namespace fds (the idmap user
    // namespace) may reuse the inode numbers of warm-up sandboxes.
    if (i >= 0) sandbox_ns.push_back(std::move(record));
  }
  Census after = TakeCensus(dir_->path());
  EXPECT_EQ(after.mounts, before.mounts) << "mounts left behind";
  EXPECT_EQ(after.fds, before.fds) << "fds left behind";
  for (const auto& [pid, start] : processes) {
    EXPECT_FALSE(ProcessAlive(pid, start)) << "process " << pid << " left behind";
  }
  // 6 namespaces per sandbox (7 with a user namespace), none of them held by anyone.
  size_t namespaces = 0;
  for (const NamespaceRecord& r : sandbox_ns) namespaces += r.inodes.size();
  EXPECT_GE(namespaces, 6u * sandbox_ns.size());
  for (pid_t holder : NamespaceHolders(sandbox_ns, cgroup_parent_)) {
    std::string links;
    for (const std::string& ns : base::DirNames(fmt::format("/proc/{}/ns", holder))) {
      char buf[128];
      ssize_t n = readlink(fmt::format("/proc/{}/ns/{}", holder, ns).c_str(), buf, sizeof buf - 1);
      if (n > 0) links += std::string(buf, static_cast<size_t>(n)) + " ";
    }
    links += " fds:";
    for (const std::string& fd : base::DirNames(fmt::format("/proc/{}/fd", holder))) {
      char buf[128];
      ssize_t n = readlink(fmt::format("/proc/{}/fd/{}", holder, fd).c_str(), buf, sizeof buf - 1);
      if (n > 0) links += " " + fd + "=" + std::string(buf, static_cast<size_t>(n));
    }
    auto stat = base::ReadSmallFile(fmt::format("/proc/{}/stat", holder));
    ADD_FAILURE() << "process " << holder
                  << " holds a sandbox namespace: " << (stat.ok() ? *stat : "?")
                  << " ns: " << links;
  }
  auto h = os::CgroupHierarchies::Detect();
  ASSERT_TRUE(h.ok());
  auto groups = os::ListCgroupChildren(*h, cgroup_parent_);
  ASSERT_TRUE(groups.ok());
  EXPECT_THAT(*groups, ::testing::IsEmpty()) << "cgroups left behind";
  EXPECT_THAT(base::DirNames(state_dir_), ::testing::ElementsAre(".idmap"));
  for (const std::string& e : base::DirNames(dir_->path())) {
    EXPECT_EQ(e.rfind("rw-", 0), std::string::npos) << "writable dir left behind: " << e;
  }
  // The runtime's own caches (idmapped layer mounts) go with it.
  rt.reset();
  Census gone = TakeCensus(dir_->path());
  EXPECT_EQ(gone.mounts, before_runtime.mounts);
  EXPECT_EQ(before.mounts, 1u) << "one idmapped layer while the runtime lives";
  EXPECT_EQ(gone.mounts, 0u);
  EXPECT_EQ(gone.fds, before_runtime.fds);
}

}  // namespace
}  // namespace warren::runtime::testing
