// The compiled Docker profile, loaded for real into a forked child (an unprivileged process may
// install a filter once no_new_privs is set).
#include "os/seccomp.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

namespace warren::os {
namespace {

TEST(SeccompTest, DockerProfileCompilesOnceToBpf) {
  auto a = DockerDefaultSeccompProgram();
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = DockerDefaultSeccompProgram();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b) << "compiled once per process";
  EXPECT_GT((*a)->instructions(), 300u);
  EXPECT_LT((*a)->instructions(), 4096u);
  // This libseccomp knows every call the profile names (it is as new as the profile).
  EXPECT_TRUE((*a)->unknown_syscalls().empty());
}

TEST(SeccompTest, UnknownNamesAreSkippedNotFatal) {
  SeccompProfile p;
  p.rules.push_back(SeccompRule{{"getpid", "no_such_syscall_name"}, {}, 0});
  auto prog = CompileSeccompProfile(p);
  ASSERT_TRUE(prog.ok()) << prog.status();
  ASSERT_EQ(prog->unknown_syscalls().size(), 1u);
  EXPECT_EQ(prog->unknown_syscalls()[0], "no_such_syscall_name");
}

// Each probe's errno (0 = allowed) in the child, reported through its exit status.
enum Probe { kMount, kUnshare, kClone3, kVsock, kInet, kPersonalityQuery, kPersonalityOdd, kCount };

TEST(SeccompTest, FilterRefusesWhatDockerRefuses) {
  auto prog = DockerDefaultSeccompProgram();
  ASSERT_TRUE(prog.ok());
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int results[kCount];
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || (*prog)->LoadRaw() != 0) _exit(99);
    auto err = [](long rc) { return rc < 0 ? errno : 0; };
    results[kMount] = err(mount("none", "/tmp", "tmpfs", 0, nullptr));
    results[kUnshare] = err(unshare(CLONE_NEWUSER));
    results[kClone3] = err(syscall(SYS_clone3, nullptr, 0));
    results[kVsock] = err(socket(40 /* AF_VSOCK */, SOCK_STREAM, 0));
    long s = socket(AF_INET, SOCK_STREAM, 0);
    results[kInet] = err(s);
    results[kPersonalityQuery] = err(personality(0xffffffff));
    results[kPersonalityOdd] = err(personality(0x0040000 /* ADDR_NO_RANDOMIZE */));
    (void)!write(pipefd[1], results, sizeof results);
    _exit(0);
  }
  close(pipefd[1]);
  int results[kCount] = {};
  ASSERT_EQ(read(pipefd[0], results, sizeof results), static_cast<ssize_t>(sizeof results));
  int status;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(results[kMount], EPERM);
  EXPECT_EQ(results[kUnshare], EPERM);
  EXPECT_EQ(results[kClone3], ENOSYS) << "so libc falls back to clone()";
  EXPECT_EQ(results[kVsock], EPERM);
  EXPECT_EQ(results[kInet], 0);
  EXPECT_EQ(results[kPersonalityQuery], 0);
  EXPECT_EQ(results[kPersonalityOdd], EPERM);
}

}  // namespace
}  // namespace warren::os
