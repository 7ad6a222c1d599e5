// Device nodes are unusable inside a sandbox, in every mode (user namespace or not, cgroup v1
// or v2): mknod of a block device fails, a node that arrives in an image layer or a volume
// does not open, and the device cgroup refuses the disk even where a mount would allow it.
// The "disk" is a loop device over a scratch file, so a regression overwrites that file, not
// the host's root disk.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/small_file.h"
#include "os/cgroup.h"
#include "security_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class DeviceTest : public AttackTest, public ::testing::WithParamInterface<SandboxMode> {
 protected:
  void SetUp() override {
    AttackTest::SetUp();
    if (IsSkipped() || HasFatalFailure()) return;
    if (GetParam().cgroup_v2) UseCgroupV2();
    if (IsSkipped() || HasFatalFailure()) return;
    auto disk = LoopDisk::Create(dir_->path() + "/disk.img");
    if (!disk.ok()) GTEST_SKIP() << "no loop device: " << disk.status();
    disk_ = std::move(disk).value();
  }
  void TearDown() override {
    AttackTest::TearDown();
    disk_.reset();
  }
  std::string Id(const std::string& what) const {
    std::string id = what + "-" + ModeName(GetParam());
    for (char& c : id) c = c == '_' ? '-' : c;
    return id;
  }
  // Writes to and reads from `node` inside the sandbox, reporting each exit code.
  static std::string WriteAndRead(const std::string& node) {
    return fmt::format(
        "echo OWNED > {0} 2>&1; echo write=$?; head -c 4 {0} > /dev/null 2>&1; echo read=$?", node);
  }
  void ExpectRefused(const std::string& out) {
    EXPECT_THAT(out, HasSubstr("write=1")) << out;
    EXPECT_THAT(out, Not(HasSubstr("read=0"))) << out;
    EXPECT_TRUE(disk_->Pristine()) << "the sandbox wrote to the disk: " << out;
  }
  std::unique_ptr<LoopDisk> disk_;
};

TEST_P(DeviceTest, MknodOfABlockDeviceAndWritingToItFail) {
  // The write goes to the node only if mknod made one (else the shell would create a file).
  std::string script = fmt::format(
      "mknod /tmp/disk b {} {} 2>&1; echo mknod=$?; "
      "if [ -b /tmp/disk ]; then {}; else echo no-node; fi",
      major(disk_->dev()), minor(disk_->dev()), WriteAndRead("/tmp/disk"));
  std::string out = Run(Spec(Id("mknod"), script, GetParam()));
  EXPECT_THAT(out, Not(HasSubstr("mknod=0"))) << out;
  EXPECT_THAT(out, HasSubstr("Operation not permitted")) << out;
  EXPECT_THAT(out, HasSubstr("no-node")) << out;
  EXPECT_THAT(out, Not(HasSubstr("write=0"))) << out;
  EXPECT_TRUE(disk_->Pristine()) << "the sandbox wrote to the disk: " << out;
}

TEST_P(DeviceTest, ADeviceNodeInAnImageLayerDoesNotOpen) {
  ASSERT_EQ(mkdir((layer_ + "/smuggled").c_str(), 0755), 0);
  ASSERT_EQ(mknod((layer_ + "/smuggled/disk").c_str(), S_IFBLK | 0666, disk_->dev()), 0);
  std::string out = Run(Spec(Id("layer"), WriteAndRead("/smuggled/disk"), GetParam()));
  ExpectRefused(out);
}

TEST_P(DeviceTest, ADeviceNodeInAVolumeDoesNotOpen) {
  std::string volume = dir_->path() + "/volume";
  ASSERT_EQ(mkdir(volume.c_str(), 0777), 0);
  ASSERT_EQ(mknod((volume + "/disk").c_str(), S_IFBLK | 0666, disk_->dev()), 0);
  SandboxSpec spec = Spec(Id("volume"), WriteAndRead("/data/disk"), GetParam());
  spec.mounts.push_back(BindMount{volume, "/data", false});
  ExpectRefused(Run(spec));
}

TEST_P(DeviceTest, TheStandardDevicesStillWork) {
  std::string out = Run(Spec(Id("std"),
                             "echo x > /dev/null && echo null=ok; head -c 3 /dev/zero | wc -c; "
                             "head -c 3 /dev/urandom | wc -c; echo x > /dev/full 2>&1; "
                             "echo full=$?; ls /dev/pts/ptmx > /dev/null && echo pts=ok",
                             GetParam()));
  EXPECT_THAT(out, HasSubstr("null=ok"));
  EXPECT_THAT(out, HasSubstr("3\n3\n"));
  EXPECT_THAT(out, HasSubstr("full=1"));
  EXPECT_THAT(out, HasSubstr("pts=ok"));
}

INSTANTIATE_TEST_SUITE_P(Modes, DeviceTest,
                         ::testing::Values(SandboxMode{false, false}, SandboxMode{true, false},
                                           SandboxMode{false, true}, SandboxMode{true, true}),
                         [](const auto& info) { return ModeName(info.param); });

// The device cgroup alone, on each version: a process in the group cannot open the disk even
// through a node on a mount that allows devices (the host's /dev), and can open /dev/null.
class DeviceCgroupTest : public ::testing::TestWithParam<os::CgroupVersion> {};

TEST_P(DeviceCgroupTest, RefusesTheDiskAndAllowsNull) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root";
  auto h = os::CgroupHierarchies::Detect(GetParam());
  if (!h.ok()) GTEST_SKIP() << h.status();
  TempDir dir("warren-devcg");
  auto disk = LoopDisk::Create(dir.path() + "/disk.img");
  if (!disk.ok()) GTEST_SKIP() << "no loop device: " << disk.status();
  auto group = os::Cgroup::Create(*h, fmt::format("warren-devcg-{}", getpid()));
  ASSERT_TRUE(group.ok()) << group.status();
  os::CgroupLimits limits;  // restrict_devices by default
  ASSERT_TRUE(group->SetLimits(limits).ok());

  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int errs[2] = {-1, -1};
    for (const std::string& d : group->Dirs()) {
      if (!base::WriteKernelFile(d + "/cgroup.procs", "0").ok()) _exit(3);
    }
    int fd = open((*disk)->path().c_str(), O_RDWR | O_CLOEXEC);
    errs[0] = fd >= 0 ? 0 : errno;
    if (fd >= 0) {
      (void)!write(fd, "OWNED", 5);
      close(fd);
    }
    fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    errs[1] = fd >= 0 ? 0 : errno;
    (void)!write(pipefd[1], errs, sizeof errs);
    _exit(0);
  }
  close(pipefd[1]);
  int errs[2] = {-1, -1};
  ssize_t got = read(pipefd[0], errs, sizeof errs);
  close(pipefd[0]);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof errs));
  EXPECT_EQ(errs[0], EPERM) << "the disk opened: " << strerror(errs[0]);
  EXPECT_EQ(errs[1], 0) << strerror(errs[1]);
  EXPECT_TRUE((*disk)->Pristine());
  EXPECT_TRUE(group->Remove(std::chrono::seconds(5)).ok());
}

INSTANTIATE_TEST_SUITE_P(Versions, DeviceCgroupTest,
                         ::testing::Values(os::CgroupVersion::kV1, os::CgroupVersion::kV2),
                         [](const auto& info) {
                           return std::string(os::CgroupVersionName(info.param));
                         });

}  // namespace
}  // namespace warren::runtime::testing
