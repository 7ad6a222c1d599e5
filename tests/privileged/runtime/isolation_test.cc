// What a process inside a sandbox can see and do.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "base/small_file.h"
#include "base/strings.h"
#include "os/capabilities.h"
#include "sandbox_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Line(const std::string& text, std::string_view prefix) {
  for (std::string_view l : base::Split(text, '\n')) {
    if (l.rfind(prefix, 0) == 0) return std::string(base::TrimSpace(l.substr(prefix.size())));
  }
  return "";
}

TEST_F(SandboxTest, RunsItsCommandAsPidOneWithTheIdAsHostname) {
  std::string out = Run(ShellSpec("pid1", "echo pid=$$; hostname; echo ppid=$PPID"));
  EXPECT_THAT(out, HasSubstr("pid=1\n"));
  EXPECT_THAT(out, HasSubstr("pid1\n"));
  EXPECT_THAT(out, HasSubstr("ppid=0"));
  auto info = rt_->Inspect("pid1");
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->state, SandboxState::kStopped);
  ASSERT_TRUE(info->last_exit.has_value());
  EXPECT_EQ(info->last_exit->exit_code, 0);
}

TEST_F(SandboxTest, HostProcessesAreInvisible) {
  std::string script = fmt::format(
      "ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' '; echo; "
      "test -e /proc/{} && echo host-visible || echo host-hidden",
      getpid());
  std::string out = Run(ShellSpec("pids", script));
  EXPECT_THAT(out, HasSubstr("host-hidden"));
  // pid 1 (the shell) and the short-lived pipeline processes, nothing else.
  auto pids = base::SplitNonEmpty(base::Split(out, '\n')[0], ' ');
  EXPECT_LE(pids.size(), 4u) << out;
  EXPECT_EQ(pids.front(), "1") << out;
}

TEST_F(SandboxTest, NetworkHasOnlyLoopbackAndItIsUp) {
  std::string out = Run(
      ShellSpec("net",
                "ls /sys/class/net | tr '\\n' ' '; echo; ip -o link | wc -l; ip -o addr show lo; "
                "nc -w 1 192.0.2.1 80 </dev/null 2>&1; echo nc=$?"));
  EXPECT_THAT(out, HasSubstr("lo \n1\n"));
  EXPECT_THAT(out, HasSubstr("127.0.0.1"));
  EXPECT_THAT(out, HasSubstr("unreachable"));
  EXPECT_THAT(out, Not(HasSubstr("nc=0")));
}

TEST_F(SandboxTest, MountingAndModuleLoadingAreRefused) {
  std::string out =
      Run(ShellSpec("refuse",
                    "mount -t tmpfs none /tmp 2>&1; echo mount=$?; "
                    "mount -o remount,rw /proc/sys 2>&1; echo remount=$?; "
                    "head -c 64 /dev/zero > /tmp/x.ko; insmod /tmp/x.ko 2>&1; echo insmod=$?; "
                    "unshare -n true 2>&1; echo unshare=$?"));
  EXPECT_THAT(out, HasSubstr("mount=1"));
  EXPECT_THAT(out, HasSubstr("remount=1"));
  EXPECT_THAT(out, HasSubstr("insmod=1"));
  EXPECT_THAT(out, HasSubstr("Operation not permitted"));
  EXPECT_THAT(out, Not(HasSubstr("unshare=0")));
}

TEST_F(SandboxTest, ProcAndSysPathsAreMaskedOrReadOnly) {
  std::string out = Run(ShellSpec(
      "masked",
      "for f in kcore keys timer_list sched_debug; do "
      "  if [ -e /proc/$f ]; then echo $f bytes=$(cat /proc/$f 2>/dev/null | wc -c); fi; done; "
      "for d in /proc/acpi /proc/scsi /sys/firmware; do "
      "  if [ -e $d ]; then echo $d entries=$(ls -A $d | wc -l); fi; done; "
      "echo x > /proc/sysrq-trigger 2>&1; echo sysrq=$?; "
      "echo 1 > /proc/sys/kernel/ns_last_pid 2>&1; echo sys=$?; "
      "touch /sys/x 2>&1; echo sysfs=$?"));
  // Whatever of these the host kernel has is empty inside.
  for (const char* f : {"kcore", "keys", "timer_list", "sched_debug"}) {
    std::string host = std::string("/proc/") + f;
    if (access(host.c_str(), F_OK) == 0) {
      EXPECT_THAT(out, HasSubstr(std::string(f) + " bytes=0")) << out;
    }
  }
  for (const char* d : {"/proc/acpi", "/proc/scsi", "/sys/firmware"}) {
    if (access(d, F_OK) == 0) {
      EXPECT_THAT(out, HasSubstr(std::string(d) + " entries=0")) << out;
    }
  }
  EXPECT_THAT(out, HasSubstr("sysrq=1"));
  EXPECT_THAT(out, HasSubstr("sys=1"));
  EXPECT_THAT(out, HasSubstr("sysfs=1"));
  EXPECT_THAT(out, HasSubstr("Read-only file system"));
}

TEST_F(SandboxTest, RootHasDockerCapabilitiesButMknodNoNewPrivsAndSeccomp) {
  std::string out = Run(ShellSpec("caps", "cat /proc/self/status"));
  std::string want = fmt::format("{:016x}", os::SandboxDefaultCapabilities());
  EXPECT_EQ(want, "00000000a00425fb");
  EXPECT_EQ(Line(out, "CapEff:"), want);
  EXPECT_EQ(Line(out, "CapPrm:"), want);
  EXPECT_EQ(Line(out, "CapBnd:"), want);
  EXPECT_EQ(Line(out, "CapInh:"), "0000000000000000");
  EXPECT_EQ(Line(out, "CapAmb:"), "0000000000000000");
  EXPECT_EQ(Line(out, "NoNewPrivs:"), "1");
  EXPECT_EQ(Line(out, "Seccomp:"), "2");
}

TEST_F(SandboxTest, NonRootUserHasNoEffectiveCapabilities) {
  SandboxSpec spec = ShellSpec("user", "id; cat /proc/self/status; touch /etc/x 2>&1; echo w=$?");
  spec.user = User{1000, 1000, {}};
  spec.working_dir = "/home/user";
  std::string out = Run(spec);
  EXPECT_THAT(out, HasSubstr("uid=1000(user) gid=1000(user)"));
  EXPECT_EQ(Line(out, "CapEff:"), "0000000000000000");
  EXPECT_EQ(Line(out, "CapBnd:"), "00000000a00425fb");
  EXPECT_THAT(out, HasSubstr("Permission denied"));
  EXPECT_THAT(out, HasSubstr("w=1"));
}

TEST_F(SandboxTest, RootInsideAUserNamespaceIsNotRootOutside) {
  // A host directory only root can read, bind-mounted read-write into the sandbox.
  std::string secret_dir = dir_->path() + "/secret";
  ASSERT_EQ(mkdir(secret_dir.c_str(), 0700), 0);
  ASSERT_TRUE(base::WriteFileAtomically(secret_dir + "/key", "host secret").ok());
  ASSERT_EQ(chmod((secret_dir + "/key").c_str(), 0600), 0);

  for (bool userns : {false, true}) {
    SCOPED_TRACE(userns ? "userns" : "no userns");
    std::string id = userns ? "uns" : "nouns";
    SandboxSpec spec =
        ShellSpec(id,
                  "id -u; cat /proc/self/uid_map; cat /secret/key 2>&1; echo; "
                  "echo new > /etc/created-inside && echo wrote-lower-file; "
                  "echo hi >> /etc/passwd && echo appended-lower-file; cat /proc/self/status");
    spec.user_namespace = userns;
    spec.mounts.push_back(BindMount{secret_dir, "/secret", false});
    std::string out = Run(spec);
    EXPECT_THAT(out, HasSubstr("0\n"));
    // Root inside writes through the overlay to files root owns in the image.
    EXPECT_THAT(out, HasSubstr("wrote-lower-file"));
    EXPECT_THAT(out, HasSubstr("appended-lower-file"));
    struct stat st;
    std::string created = spec.writable_dir + "/upper/etc/created-inside";
    ASSERT_EQ(stat(created.c_str(), &st), 0);
    if (userns) {
      EXPECT_THAT(out, ::testing::ContainsRegex("0 +1000000000 +65536"));
      EXPECT_THAT(out, HasSubstr("Permission denied"));  // host root's file
      EXPECT_THAT(out, Not(HasSubstr("host secret")));
      EXPECT_EQ(st.st_uid, 1000000000u) << "files root writes inside belong to the mapped uid";
      // The image layer itself is untouched.
      auto passwd = base::ReadSmallFile(layer_ + "/etc/passwd");
      ASSERT_TRUE(passwd.ok());
      EXPECT_THAT(*passwd, Not(HasSubstr("hi\n")));
    } else {
      EXPECT_THAT(out, HasSubstr("host secret"));
      EXPECT_EQ(st.st_uid, 0u);
    }
  }
}

TEST_F(SandboxTest, UserNamespaceSandboxRunsAsMappedUidOnTheHost) {
  SandboxSpec spec = ShellSpec("unsrun", "sleep 60");
  spec.user_namespace = true;
  Status st = rt_->Create(spec);
  ASSERT_TRUE(st.ok()) << st;
  st = rt_->Start("unsrun");
  ASSERT_TRUE(st.ok()) << st;
  auto pid = rt_->Pid("unsrun");
  ASSERT_TRUE(pid.ok());
  auto status = base::ReadSmallFile(fmt::format("/proc/{}/status", *pid));
  ASSERT_TRUE(status.ok());
  EXPECT_THAT(Line(*status, "Uid:"), HasSubstr("1000000000"));
  // Its capabilities are full only inside its own user namespace.
  EXPECT_EQ(Line(*status, "CapEff:"), "00000000a00425fb");
  // Root inside is no one outside, so setuid programs of the image may work (sudo), as in
  // Docker's default; the seccomp filter holds all the same.
  EXPECT_EQ(Line(*status, "NoNewPrivs:"), "0");
  EXPECT_EQ(Line(*status, "Seccomp:"), "2");
}

TEST_F(SandboxTest, WritesLandInTheWritableLayerOnly) {
  std::string out = Run(ShellSpec("upper", "echo data > /root/file; rm /bin/ls; ls /bin/ls 2>&1"));
  EXPECT_THAT(out, HasSubstr("No such file"));
  auto data = base::ReadSmallFile(dir_->path() + "/rw-upper/upper/root/file");
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(*data, "data\n");
  struct stat st;
  EXPECT_EQ(lstat((layer_ + "/bin/ls").c_str(), &st), 0) << "the image layer is never written";
}

// fsync and syncfs inside reach no disk: a host crash loses a running sandbox's writable layer
// anyway, and a stop syncs the layer it keeps (lifecycle_test restarts one).
TEST_F(SandboxTest, TheRootIsAVolatileOverlay) {
  std::string out = Run(ShellSpec("vol", "grep ' / / ' /proc/self/mountinfo"));
  EXPECT_THAT(out, HasSubstr(" - overlay "));
  EXPECT_THAT(out, HasSubstr("volatile"));
}

TEST_F(SandboxTest, MinimalDevWorks) {
  std::string out =
      Run(ShellSpec("dev",
                    "ls /dev | tr '\\n' ' '; echo; echo x > /dev/null && echo null-ok; "
                    "head -c 5 /dev/urandom | wc -c; head -c 3 /dev/zero | wc -c; "
                    "echo x > /dev/full 2>&1; echo full=$?; "
                    "mknod /tmp/sda b 8 0 && head -c 1 /tmp/sda 2>&1; echo disk=$?"));
  for (const char* node : {"null", "zero", "full", "random", "urandom", "tty", "ptmx", "pts", "shm",
                           "fd", "stdin", "stdout", "stderr"}) {
    EXPECT_THAT(out, HasSubstr(std::string(node) + " ")) << node;
  }
  EXPECT_THAT(out, HasSubstr("null-ok"));
  EXPECT_THAT(out, HasSubstr("5\n3\n"));
  EXPECT_THAT(out, HasSubstr("full=1"));
  // mknod is refused (no CAP_MKNOD); the device cgroup would refuse the disk anyway.
  EXPECT_THAT(out, HasSubstr("Operation not permitted"));
  EXPECT_THAT(out, Not(HasSubstr("disk=0")));
}

TEST_F(SandboxTest, RlimitsApply) {
  SandboxSpec spec = ShellSpec("rlim", "ulimit -n; ulimit -Hn; ulimit -c");
  spec.rlimits.push_back(os::Rlimit{RLIMIT_CORE, 0, 0});
  std::string out = Run(spec);
  EXPECT_THAT(out, HasSubstr("1024\n"));
  EXPECT_THAT(out, HasSubstr("0\n"));
  spec.id = "rlim2";
  spec.log_path = LogPath("rlim2");
  spec.writable_dir = dir_->path() + "/rw-rlim2";
  spec.rlimits = {os::Rlimit{RLIMIT_NOFILE, 4096, 4096}};
  EXPECT_THAT(Run(spec), HasSubstr("4096\n4096\n"));
}

TEST_F(SandboxTest, BindMountsAreReadOnlyUnlessAskedAndTargetsStayInside) {
  // A stand-in for warren-envd: a read-only executable bind mounted where the image has no file.
  std::string tool = dir_->path() + "/tool";
  ASSERT_TRUE(base::WriteFileAtomically(tool, "#!/bin/sh\necho tool-ran\n").ok());
  ASSERT_EQ(chmod(tool.c_str(), 0755), 0);
  std::string shared = dir_->path() + "/shared";
  ASSERT_EQ(mkdir(shared.c_str(), 0755), 0);
  // The image plants an absolute symlink: resolved on the host it would point at the host's
  // /etc; resolved in the sandbox it is the sandbox's /etc.
  ASSERT_EQ(symlink("/etc", (layer_ + "/escape").c_str()), 0);

  SandboxSpec spec =
      ShellSpec("binds",
                "/usr/local/bin/warren-tool; echo x > /usr/local/bin/warren-tool 2>&1; "
                "echo ro=$?; echo from-inside > /shared/out; ls /etc/warren-marker");
  spec.mounts = {BindMount{tool, "/usr/local/bin/warren-tool", true},
                 BindMount{shared, "/shared", false},
                 BindMount{tool, "/escape/warren-marker", true}};
  std::string out = Run(spec);
  EXPECT_THAT(out, HasSubstr("tool-ran"));
  EXPECT_THAT(out, HasSubstr("Read-only file system"));
  EXPECT_THAT(out, HasSubstr("ro=1"));
  EXPECT_THAT(out, HasSubstr("/etc/warren-marker"));
  auto written = base::ReadSmallFile(shared + "/out");
  ASSERT_TRUE(written.ok());
  EXPECT_EQ(*written, "from-inside\n");
  struct stat st;
  EXPECT_NE(stat("/etc/warren-marker", &st), 0) << "a bind target escaped to the host";
}

TEST_F(SandboxTest, WorkingDirectoryAndEnvironmentReachPidOne) {
  SandboxSpec spec = ShellSpec("env", "pwd; echo $GREETING");
  spec.env.push_back("GREETING=hello from env");
  spec.working_dir = "/tmp";
  std::string out = Run(spec);
  EXPECT_THAT(out, HasSubstr("/tmp\nhello from env\n"));
}

TEST_F(SandboxTest, CommandsAreLookedUpInPath) {
  SandboxSpec spec = ShellSpec("path", "");
  spec.command = {"echo", "found", "in", "path"};
  EXPECT_THAT(Run(spec), HasSubstr("found in path"));
}

}  // namespace
}  // namespace warren::runtime::testing
