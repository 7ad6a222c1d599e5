// Parsers and tables of os/: no privileges needed.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include "os/capabilities.h"
#include "os/cgroup.h"
#include "os/mount.h"
#include "os/namespace.h"
#include "os/pidfd.h"
#include "os/rlimit.h"

namespace warren::os {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(MountInfoTest, ParsesOptionalFieldsAndEscapes) {
  auto mounts = ParseMountInfo(
      "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
      "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate\n"
      "50 22 0:50 /sub /mnt/with\\040space rw master:2 shared:3 - overlay overlay "
      "rw,lowerdir=/a\n");
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  ASSERT_EQ(mounts->size(), 3u);
  EXPECT_EQ((*mounts)[0].mount_point, "/");
  EXPECT_EQ((*mounts)[0].fs_type, "ext4");
  EXPECT_EQ((*mounts)[0].source, "/dev/vda");
  EXPECT_EQ((*mounts)[1].super_options, "rw,nsdelegate");
  EXPECT_EQ((*mounts)[2].mount_point, "/mnt/with space");
  EXPECT_EQ((*mounts)[2].root, "/sub");
  EXPECT_EQ((*mounts)[2].parent_id, 22);
}

TEST(MountInfoTest, MalformedLineIsAnErrorNamingIt) {
  auto mounts = ParseMountInfo("22 1 8:1 / / rw no-separator-here\n");
  EXPECT_EQ(mounts.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(mounts.status().message(), HasSubstr("no-separator-here"));
}

TEST(MountInfoTest, ReadsOwnMountTable) {
  auto mounts = ReadMountInfo();
  ASSERT_TRUE(mounts.ok()) << mounts.status();
  EXPECT_FALSE(mounts->empty());
}

TEST(ProcStatTest, StartTimeSurvivesHostileCommandNames) {
  // Field 22 counted from after the last ')', whatever the command name holds.
  std::string stat =
      "4242 (evil) (name 1 2 3) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
      "987654 1000 100 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0";
  auto t = ParseStatStartTime(stat);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(*t, 987654u);
  EXPECT_FALSE(ParseStatStartTime("4242 (x) S 1 2").ok());
  EXPECT_FALSE(ParseStatStartTime("no parenthesis").ok());
}

TEST(ProcStatTest, OwnStartTimeAndBootId) {
  auto a = ProcessStartTime(getpid());
  auto b = ProcessStartTime(getpid());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(*a, *b);
  auto boot = BootId();
  ASSERT_TRUE(boot.ok());
  EXPECT_EQ(boot->size(), 36u);
  EXPECT_EQ(ProcessStartTime(-5).status().code(), StatusCode::kNotFound);
}

std::vector<MountEntry> Cgroups(std::vector<std::pair<std::string, std::string>> specs) {
  std::vector<MountEntry> out;
  for (auto& [point, opts] : specs) {
    MountEntry e;
    e.mount_point = point;
    e.fs_type = opts == "cgroup2" ? "cgroup2" : "cgroup";
    e.super_options = opts;
    out.push_back(e);
  }
  return out;
}

TEST(CgroupHierarchiesTest, HybridHostUsesV1AndMergesCoMountedControllers) {
  auto h = CgroupHierarchies::FromMounts(Cgroups({{"/sys/fs/cgroup/memory", "rw,memory"},
                                                  {"/sys/fs/cgroup/cpu,cpuacct", "rw,cpu,cpuacct"},
                                                  {"/sys/fs/cgroup/pids", "rw,pids"},
                                                  {"/sys/fs/cgroup/freezer", "rw,freezer"},
                                                  {"/sys/fs/cgroup/devices", "rw,devices"},
                                                  {"/sys/fs/cgroup/unified", "cgroup2"}}),
                                         std::nullopt);
  ASSERT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(h->version, CgroupVersion::kV1);
  EXPECT_EQ(h->unified, "/sys/fs/cgroup/unified");
  EXPECT_THAT(h->DirsFor("warren/sb"),
              ElementsAre("/sys/fs/cgroup/memory/warren/sb", "/sys/fs/cgroup/cpu,cpuacct/warren/sb",
                          "/sys/fs/cgroup/pids/warren/sb", "/sys/fs/cgroup/freezer/warren/sb",
                          "/sys/fs/cgroup/devices/warren/sb"));
}

TEST(CgroupHierarchiesTest, UnifiedOnlyHostUsesV2) {
  auto h = CgroupHierarchies::FromMounts(Cgroups({{"/sys/fs/cgroup", "cgroup2"}}), std::nullopt);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->version, CgroupVersion::kV2);
  EXPECT_THAT(h->DirsFor("warren/sb"), ElementsAre("/sys/fs/cgroup/warren/sb"));
}

TEST(CgroupHierarchiesTest, MissingPiecesAreFailedPrecondition) {
  auto no_freezer = CgroupHierarchies::FromMounts(
      Cgroups(
          {{"/m", "rw,memory"}, {"/c", "rw,cpu,cpuacct"}, {"/p", "rw,pids"}, {"/d", "devices"}}),
      std::nullopt);
  EXPECT_EQ(no_freezer.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(no_freezer.status().message(), HasSubstr("'freezer'"));
  auto no_v2 = CgroupHierarchies::FromMounts(Cgroups({{"/m", "rw,memory"}}), CgroupVersion::kV2);
  EXPECT_EQ(no_v2.status().code(), StatusCode::kFailedPrecondition);
}

TEST(CgroupStatsTest, FlatKeyedFiles) {
  std::string text = "usage_usec 1234\nuser_usec 1000\nsystem_usec 234\n";
  EXPECT_EQ(FlatKeyedValue(text, "usage_usec"), 1234u);
  EXPECT_EQ(FlatKeyedValue(text, "system_usec"), 234u);
  EXPECT_EQ(FlatKeyedValue(text, "usage"), std::nullopt);
  EXPECT_EQ(FlatKeyedValue("oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", "oom_kill"), 3u);
}

TEST(CapabilitiesTest, DockerDefaultSet) {
  EXPECT_EQ(DockerDefaultCapabilities(), 0xa80425fbull);
  EXPECT_EQ(SandboxDefaultCapabilities(), DockerDefaultCapabilities() & ~CapBit(27 /* MKNOD */));
  auto names = CapabilityNames(DockerDefaultCapabilities());
  EXPECT_EQ(names.size(), 14u);
  EXPECT_EQ(names.front(), "CAP_CHOWN");
  EXPECT_EQ(names.back(), "CAP_SETFCAP");
  EXPECT_EQ(ParseCapMask("00000000a80425fb"), 0xa80425fbull);
  EXPECT_EQ(ParseCapMask("zz"), std::nullopt);
  EXPECT_EQ(CapabilityName(21), "CAP_SYS_ADMIN");
  auto last = LastCapability();
  ASSERT_TRUE(last.ok());
  EXPECT_GE(*last, 37);
}

TEST(RlimitTest, NamesAndValidation) {
  EXPECT_EQ(RlimitFromName("nofile"), RLIMIT_NOFILE);
  EXPECT_EQ(RlimitFromName("RLIMIT_CORE"), RLIMIT_CORE);
  EXPECT_EQ(RlimitFromName("bogus"), std::nullopt);
  EXPECT_EQ(RlimitName(RLIMIT_NPROC), "RLIMIT_NPROC");
  EXPECT_TRUE(ValidateRlimit({RLIMIT_NOFILE, 10, 20}).ok());
  EXPECT_EQ(ValidateRlimit({RLIMIT_NOFILE, 30, 20}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ValidateRlimit({999, 1, 1}).code(), StatusCode::kInvalidArgument);
  auto cur = CurrentRlimit(RLIMIT_NOFILE);
  ASSERT_TRUE(cur.ok());
  EXPECT_LE(cur->soft, cur->hard);
}

TEST(NamespaceTest, NamesFlagsAndMaps) {
  EXPECT_EQ(NamespaceName(Namespace::kMount), "mnt");
  EXPECT_EQ(NamespaceCloneFlag(Namespace::kNet), static_cast<uint64_t>(CLONE_NEWNET));
  EXPECT_EQ(FormatIdMapping({0, 100000, 65536}), "0 100000 65536\n");
  auto ino = NamespaceInode(getpid(), Namespace::kNet);
  ASSERT_TRUE(ino.ok()) << ino.status();
  EXPECT_GT(*ino, 0u);
}

}  // namespace
}  // namespace warren::os
