// The compiled Docker profile, loaded for real into a forked child (an unprivileged process may
// install a filter once no_new_privs is set).
#include "os/seccomp.h"

#include <errno.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/btrfs.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <iterator>
#include <random>
#include <vector>

#include "os/testing/seccomp_sim.h"

namespace warren::os {
namespace {

TEST(SeccompTest, DockerProfileCompilesOnceToBpf) {
  auto a = DockerDefaultSeccompProgram();
  ASSERT_TRUE(a.ok()) << a.status();
  auto b = DockerDefaultSeccompProgram();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*a, *b) << "compiled once per process";
  EXPECT_GT((*a)->instructions(), 100u);
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

constexpr int kI386Socketcall = 102, kI386Ipc = 117, kI386Socket = 359;
constexpr int kX8664Socket = 41;
constexpr uint64_t kSysSocket = 1, kSysBind = 2, kSysSocketpair = 8;  // socketcall's calls
constexpr uint64_t kAfVsock = 40;
constexpr uint32_t kX32Bit = 0x40000000;

uint32_t Decide(const SeccompProgram& prog, const seccomp_data& call) {
  auto action = testing::RunSeccompFilter(prog.filter(), call);
  EXPECT_TRUE(action.ok()) << action.status();
  return action.ok() ? *action : 0xdeadbeef;
}

constexpr uint32_t kAllow = SECCOMP_RET_ALLOW;
constexpr uint32_t kEperm = SECCOMP_RET_ERRNO | EPERM;
constexpr uint32_t kEnosys = SECCOMP_RET_ERRNO | ENOSYS;

// The Docker profile with rules for every ABI, whatever this kernel serves: what a host with
// i386 and x32 loads.
const SeccompProgram& AllAbis() {
  static const SeccompProgram program = *CompileSeccompProfile(DockerDefaultSeccompProfile());
  return program;
}

// What the filter decides on every ABI it is loaded for, by running the program itself on the
// calls: this machine (a PVM guest) has no i386 entry and its kernel no x32, so they cannot be
// made for real here (the test below makes them where they exist).
TEST(SeccompTest, NoAbiGoesAroundTheSocketFamilyFilter) {
  const SeccompProgram& p = AllAbis();
  using testing::SeccompCall;
  // The filter itself, on x86_64: a refused family is EPERM, others pass.
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Socket, {kAfVsock, SOCK_STREAM})),
            kEperm);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Socket, {AF_INET, SOCK_STREAM})),
            kAllow);
  // x32: the same call numbers with bit 30 set meet the same rules.
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX32Bit | kX8664Socket, {kAfVsock})), kEperm);
  // i386, direct socket(): filtered by family.
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socket, {kAfVsock, SOCK_STREAM})), kEperm);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socket, {AF_INET, SOCK_STREAM})), kAllow);
  // i386 socketcall(SYS_SOCKET, args): the family is behind a pointer, so every family is
  // refused; the other sub-calls the profile allows directly still pass.
  const uint64_t args_ptr = 0x10000;
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {kSysSocket, args_ptr})),
            kEperm);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {kSysBind, args_ptr})), kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {kSysSocketpair, args_ptr})),
            kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {99, args_ptr})), kEperm);
  // i386 ipc(): the SysV operations (semget 2, shmat with an ABI version 21 | 1 << 16) pass, an
  // unknown call number does not.
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {2})), kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {21 | (1 << 16)})), kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {99})), kEperm);
  // An ABI the filter was not built for is refused as a kernel without it would: ENOSYS.
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_AARCH64, 198, {kAfVsock})), kEnosys);
}

// A sandbox may use ioctl() freely but for the btrfs requests that would make a subvolume
// outside its storage quota, on every ABI, whatever it puts in the request's high bits.
TEST(SeccompTest, NoAbiMakesABtrfsSubvolume) {
  const SeccompProgram& p = AllAbis();
  using testing::SeccompCall;
  constexpr int kX8664Ioctl = 16, kX32Ioctl = 514, kI386Ioctl = 54;
  for (uint64_t request : {BTRFS_IOC_SNAP_CREATE, BTRFS_IOC_SUBVOL_CREATE, BTRFS_IOC_SNAP_CREATE_V2,
                           BTRFS_IOC_SUBVOL_CREATE_V2}) {
    EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {3, request})), kEperm);
    EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {3, request | (1ull << 40)})),
              kEperm);
    EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX32Bit | kX32Ioctl, {3, request})), kEperm);
    EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Ioctl, {3, request})), kEperm);
  }
  // Every other request passes: a terminal's, and btrfs's clone (cp --reflink).
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {1, TCGETS})), kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {3, BTRFS_IOC_CLONE})), kAllow);
  EXPECT_EQ(Decide(p, SeccompCall(AUDIT_ARCH_I386, kI386Ioctl, {1, TCGETS})), kAllow);
}

// For real: the filter refuses the call itself (before btrfs, or any file system, sees it).
TEST(SeccompTest, SubvolumeCreateIsRefusedForReal) {
  auto prog = DockerDefaultSeccompProgram();
  ASSERT_TRUE(prog.ok());
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || (*prog)->LoadRaw() != 0) _exit(99);
    btrfs_ioctl_vol_args args{};
    std::strcpy(args.name, "escape");
    // fd 0 is not a btrfs directory: without the filter this is ENOTTY or EBADF, never EPERM.
    long rc = ioctl(0, BTRFS_IOC_SUBVOL_CREATE, &args);
    _exit(rc < 0 && errno == EPERM ? 0 : 1);
  }
  int status;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "the filter let BTRFS_IOC_SUBVOL_CREATE through";
}

TEST(SeccompTest, I386RulesCompileBeforeLibseccompsAndMatchTheirArguments) {
  SeccompProfile profile;
  profile.rules.push_back(SeccompRule{{"getpid", "socketcall"}, {}, 0});
  profile.i386_first.push_back(
      SeccompRule{{"socketcall"}, {{0, SeccompOp::kNotEqual, 5, 0}}, EACCES});
  profile.i386_first.push_back(SeccompRule{
      {"ipc"}, {{0, SeccompOp::kMaskedEqual, 3, 0xff}, {1, SeccompOp::kEqual, 7, 0}}, ENOSPC});
  auto prog = CompileSeccompProfile(profile);
  ASSERT_TRUE(prog.ok()) << prog.status();
  using testing::SeccompCall;
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {4})),
            SECCOMP_RET_ERRNO | EACCES);
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_I386, kI386Socketcall, {5})), kAllow);
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {0x103, 7})),
            SECCOMP_RET_ERRNO | ENOSPC);
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {0x103, 8})), kEperm);
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_I386, kI386Ipc, {0x104, 7})), kEperm);
  // x86_64 is untouched by i386 rules.
  EXPECT_EQ(Decide(*prog, SeccompCall(AUDIT_ARCH_X86_64, 39 /* getpid */)), kAllow);

  SeccompProfile unknown;
  unknown.i386_first.push_back(SeccompRule{{"no_such_call"}, {}, EPERM});
  EXPECT_FALSE(CompileSeccompProfile(unknown).ok());
}

// An i386 system call from 64-bit code: `int $0x80` goes through the 32-bit table and seccomp
// sees AUDIT_ARCH_I386, as for a 32-bit binary. Arguments are truncated to 32 bits (memory they
// point to must sit below 4 GiB); the kernel clobbers r8-r11. Returns -errno.
long I386Syscall(long nr, long a = 0, long b = 0, long c = 0) {
  long ret;
  asm volatile("int $0x80"
               : "=a"(ret)
               : "a"(nr), "b"(a), "c"(b), "d"(c)
               : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

// Whether this kernel runs i386 system calls (a PVM guest, for one, faults on int $0x80): the
// test's own answer, to check KernelSeccompAbis' probe against.
bool I386Available() {
  pid_t child = fork();
  if (child == 0) _exit(I386Syscall(20 /* getpid */) > 0 ? 0 : 1);
  int status = 0;
  waitpid(child, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// A kernel without the 32-bit ABIs (this PVM guest: no ia32 entry, no x32) gets a program
// without their rules: a third as long (each instruction is ~2 µs of every sandbox start), the
// same decisions on x86_64, and ENOSYS, what such a kernel answers, for a call on either ABI.
TEST(SeccompTest, AnAbiTheKernelLacksIsLeftOutAndAnsweredEnosys) {
  const SeccompAbis kernel = KernelSeccompAbis();
  EXPECT_EQ(kernel.i386, I386Available());
  EXPECT_EQ(kernel.x32, !(syscall(kX32Bit | SYS_getpid) < 0 && errno == ENOSYS));
  auto loaded = DockerDefaultSeccompProgram();
  ASSERT_TRUE(loaded.ok());
  auto same = CompileSeccompProfile(DockerDefaultSeccompProfile(), kernel);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ((*loaded)->instructions(), same->instructions()) << "compiled for this kernel";

  auto native = CompileSeccompProfile(DockerDefaultSeccompProfile(), {.i386 = false, .x32 = false});
  ASSERT_TRUE(native.ok()) << native.status();
  EXPECT_LT(native->instructions() * 2, AllAbis().instructions());
  using testing::SeccompCall;
  constexpr int kX8664Ioctl = 16, kX8664Mount = 165, kX8664Getpid = 39;
  for (const seccomp_data& call :
       {SeccompCall(AUDIT_ARCH_X86_64, kX8664Socket, {kAfVsock, SOCK_STREAM}),
        SeccompCall(AUDIT_ARCH_X86_64, kX8664Socket, {AF_INET, SOCK_STREAM}),
        SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {3, BTRFS_IOC_SUBVOL_CREATE}),
        SeccompCall(AUDIT_ARCH_X86_64, kX8664Ioctl, {1, TCGETS}),
        SeccompCall(AUDIT_ARCH_X86_64, kX8664Mount, {}),
        SeccompCall(AUDIT_ARCH_X86_64, kX8664Getpid, {})}) {
    EXPECT_EQ(Decide(*native, call), Decide(AllAbis(), call)) << "x86_64 call " << call.nr;
  }
  EXPECT_EQ(Decide(*native, SeccompCall(AUDIT_ARCH_X86_64, kX32Bit | kX8664Getpid, {})), kEnosys);
  EXPECT_EQ(Decide(*native, SeccompCall(AUDIT_ARCH_X86_64, kX32Bit | kX8664Socket, {kAfVsock})),
            kEnosys);
  EXPECT_EQ(Decide(*native, SeccompCall(AUDIT_ARCH_I386, kI386Socket, {AF_INET, SOCK_STREAM})),
            kEnosys);
  EXPECT_EQ(Decide(*native, SeccompCall(AUDIT_ARCH_I386, 20 /* getpid */, {})), kEnosys);
  // Loaded for real, x86_64 calls go on as before.
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || native->LoadRaw() != 0) _exit(99);
    const bool ok =
        getpid() > 0 && socket(static_cast<int>(kAfVsock), SOCK_STREAM, 0) < 0 && errno == EPERM;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  waitpid(child, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
}

TEST(SeccompTest, ThirtyTwoBitSocketcallIsRefusedForReal) {
  if (!KernelSeccompAbis().i386) GTEST_SKIP() << "this kernel does not run i386 system calls";
  auto prog = DockerDefaultSeccompProgram();
  ASSERT_TRUE(prog.ok());
  // socketcall reads its arguments from memory the i386 entry can address.
  void* low =
      mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
  ASSERT_NE(low, MAP_FAILED);
  auto* args = static_cast<uint32_t*>(low);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    int results[3];
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || (*prog)->LoadRaw() != 0) _exit(99);
    auto err = [](long rc) { return rc < 0 ? static_cast<int>(-rc) : 0; };
    auto ptr = static_cast<long>(reinterpret_cast<uintptr_t>(args));
    args[0] = kAfVsock, args[1] = SOCK_STREAM, args[2] = 0;
    results[0] = err(I386Syscall(kI386Socketcall, kSysSocket, ptr));
    results[1] = err(I386Syscall(kI386Socket, kAfVsock, SOCK_STREAM, 0));
    results[2] = err(I386Syscall(kI386Socket, AF_INET, SOCK_STREAM, 0));
    (void)!write(pipefd[1], results, sizeof results);
    _exit(0);
  }
  close(pipefd[1]);
  int results[3] = {};
  ssize_t got = read(pipefd[0], results, sizeof results);
  close(pipefd[0]);
  int status;
  waitpid(child, &status, 0);
  munmap(low, 4096);
  ASSERT_EQ(got, static_cast<ssize_t>(sizeof results));
  EXPECT_EQ(results[0], EPERM) << strerror(results[0]);
  EXPECT_EQ(results[1], EPERM) << strerror(results[1]);
  EXPECT_EQ(results[2], 0) << strerror(results[2]);
}

// Without x32 each ABI's rules are compiled by hand into runs of call numbers (and of a
// multiplexer's sub-calls): the program must decide every call as libseccomp's does, on every
// ABI, for arguments on either side of each rule (x86_64 compares 64 bits: a value's high half
// matters), every socketcall and ipc sub-call, and random ones.
TEST(SeccompTest, HandCompiledSectionsDecideAsLibseccomp) {
  std::vector<std::vector<uint64_t>> args = {
      {},
      {kAfVsock},
      {kAfVsock | (1ull << 32)},
      {AF_INET},
      {0x8},
      {0x8 | (1ull << 32)},
      {0x20000},
      {0x20008},
      {0xffffffff},
      {~0ull},
      {0x40000},
      {CLONE_NEWNS | SIGCHLD},
      {CLONE_NEWUSER},
      {SIGCHLD | (1ull << 40)},
      {SIGCHLD},
      {3, BTRFS_IOC_SUBVOL_CREATE},
      {3, BTRFS_IOC_SNAP_CREATE_V2 | (1ull << 40)},
      {3, TCGETS},
      {1, 0x103, 7},
  };
  // Every sub-call number of socketcall() and ipc(), bare and with ipc's version bits.
  for (uint64_t call = 0; call <= 30; ++call) {
    args.push_back({call});
    args.push_back({call | (1 << 16)});
  }
  std::mt19937_64 random(12);
  const uint64_t picks[] = {0, 1, 8, 40, 0x20008, 0xffffffff, 1ull << 32, CLONE_NEWPID};
  for (int i = 0; i < 30; ++i) {
    std::vector<uint64_t> a;
    for (int k = 0; k < 6; ++k) {
      a.push_back(random() % 2 ? picks[random() % std::size(picks)] : random());
    }
    args.push_back(a);
  }
  std::vector<uint32_t> numbers;
  for (uint32_t nr = 0; nr < 600; ++nr) numbers.push_back(nr);
  for (uint32_t nr = 0; nr < 600; ++nr) numbers.push_back(kX32Bit | nr);
  for (uint32_t nr : {0x3fffffffu, 0x7fffffffu, 0x80000000u, 0xfffffffeu, 0xffffffffu}) {
    numbers.push_back(nr);
  }
  for (bool i386 : {false, true}) {
    const SeccompAbis abis{.i386 = i386, .x32 = false};
    auto fast = CompileSeccompProfile(DockerDefaultSeccompProfile(), abis);
    auto reference = CompileSeccompProfileWithLibseccomp(DockerDefaultSeccompProfile(), abis);
    ASSERT_TRUE(fast.ok()) << fast.status();
    ASSERT_TRUE(reference.ok()) << reference.status();
    EXPECT_LT(fast->instructions() + 150, reference->instructions())
        << fast->instructions() << " against " << reference->instructions();
    EXPECT_EQ(fast->unknown_syscalls(), reference->unknown_syscalls());
    int differences = 0;
    for (uint32_t arch :
         {uint32_t{AUDIT_ARCH_X86_64}, uint32_t{AUDIT_ARCH_I386}, uint32_t{AUDIT_ARCH_AARCH64}}) {
      for (uint32_t nr : numbers) {
        for (const auto& a : args) {
          seccomp_data call = testing::SeccompCall(arch, 0, {});
          call.nr = static_cast<int>(nr);
          for (size_t k = 0; k < a.size(); ++k) call.args[k] = a[k];
          const uint32_t got = Decide(*fast, call), want = Decide(*reference, call);
          if (got != want && ++differences <= 10) {
            ADD_FAILURE() << "i386=" << i386 << " arch=" << std::hex << arch << " nr=" << nr
                          << " arg0=" << (a.empty() ? 0 : a[0]) << " got=" << got
                          << " want=" << want;
          }
        }
      }
    }
    EXPECT_EQ(differences, 0) << "i386=" << i386;
  }
}

TEST(SeccompTest, HandCompiledSectionRefusesAmbiguousRules) {
  SeccompProfile both;
  both.rules.push_back(SeccompRule{{"getpid"}, {}, 0});
  both.rules.push_back(SeccompRule{{"getpid"}, {{0, SeccompOp::kEqual, 1, 0}}, 0});
  auto compiled = CompileSeccompProfile(both, {.i386 = false, .x32 = false});
  ASSERT_FALSE(compiled.ok());
  EXPECT_NE(compiled.status().message().find("getpid"), std::string::npos) << compiled.status();
  SeccompProfile twice;
  twice.rules.push_back(SeccompRule{{"getpid"}, {}, 0});
  twice.rules.push_back(SeccompRule{{"getpid"}, {}, EPERM});
  EXPECT_FALSE(CompileSeccompProfile(twice, {.i386 = false, .x32 = false}).ok());
  SeccompProfile bad_arg;
  bad_arg.rules.push_back(SeccompRule{{"getpid"}, {{6, SeccompOp::kEqual, 1, 0}}, 0});
  EXPECT_FALSE(CompileSeccompProfile(bad_arg, {.i386 = false, .x32 = false}).ok());
}

}  // namespace
}  // namespace warren::os
