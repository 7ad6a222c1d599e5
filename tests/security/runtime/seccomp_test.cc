// The seccomp profile's socket filter (no AF_VSOCK: it would reach the host's vsock services)
// holds on every ABI a sandboxed program can use: x86_64, x32 and i386 — including i386's
// socketcall(), which carries the family in memory a filter cannot read and so is refused
// whole for SYS_SOCKET.
#include "os/seccomp.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/socket.h>

#include "os/testing/seccomp_sim.h"
#include "security_fixture.h"

namespace warren::runtime::testing {
namespace {

using ::testing::AnyOf;
using ::testing::HasSubstr;

constexpr int kAfVsock = 40;
constexpr uint32_t kProfileErrno = SECCOMP_RET_ERRNO | EPERM;

// What the runtime's own program decides, run in a BPF interpreter: the i386 ABI cannot be
// entered on every machine (a PVM guest faults on int $0x80), the decision can always be read.
// The program loaded here leaves out an ABI the kernel lacks and answers its calls ENOSYS, as
// that kernel does; the program with every ABI (what a host with i386 and x32 loads) answers
// the profile's EPERM on each.
TEST(SeccompAbiTest, TheSandboxFilterRefusesVsockOnEveryAbi) {
  auto loaded = os::DockerDefaultSeccompProgram();
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto every_abi = os::CompileSeccompProfile(os::DockerDefaultSeccompProfile());
  ASSERT_TRUE(every_abi.ok()) << every_abi.status();
  const os::SeccompAbis kernel = os::KernelSeccompAbis();
  constexpr uint32_t kAbsentAbi = SECCOMP_RET_ERRNO | ENOSYS;
  for (const os::SeccompProgram* prog :
       std::initializer_list<const os::SeccompProgram*>{*loaded, &*every_abi}) {
    const bool all = prog == &*every_abi;
    SCOPED_TRACE(all ? "every ABI" : "the kernel's ABIs");
    auto decide = [&](uint32_t arch, int nr, std::initializer_list<uint64_t> args) {
      auto action =
          os::testing::RunSeccompFilter(prog->filter(), os::testing::SeccompCall(arch, nr, args));
      EXPECT_TRUE(action.ok()) << action.status();
      return action.ok() ? *action : 0;
    };
    const uint32_t x32 = all || kernel.x32 ? kProfileErrno : kAbsentAbi;
    const uint32_t i386 = all || kernel.i386 ? kProfileErrno : kAbsentAbi;
    EXPECT_EQ(decide(AUDIT_ARCH_X86_64, 41, {kAfVsock, SOCK_STREAM}), kProfileErrno);
    EXPECT_EQ(decide(AUDIT_ARCH_X86_64, 0x40000000 | 41, {kAfVsock, SOCK_STREAM}), x32);
    EXPECT_EQ(decide(AUDIT_ARCH_I386, 359, {kAfVsock, SOCK_STREAM}), i386);
    // socketcall(SYS_SOCKET, &{AF_VSOCK, SOCK_STREAM, 0}): the pointer is all the filter sees.
    EXPECT_EQ(decide(AUDIT_ARCH_I386, 102, {1, 0x10000}), i386);
  }
}

class SeccompSandboxTest : public AttackTest, public ::testing::WithParamInterface<bool> {};

TEST_P(SeccompSandboxTest, AProgramInTheSandboxCannotMakeAVsockSocket) {
  std::string out = Run(Spec(GetParam() ? "vsock-userns" : "vsock-rootful",
                             "/probe socket 40; /probe socket 2; /probe i386-socketcall 40; "
                             "/probe i386-socket 40",
                             SandboxMode{GetParam(), false}));
  EXPECT_THAT(out, HasSubstr("socket errno=1\n")) << out;  // AF_VSOCK: the profile's EPERM
  EXPECT_THAT(out, HasSubstr("socket ok\n")) << out;       // AF_INET still works
  // i386 calls, where this kernel can make them: the same EPERM.
  EXPECT_THAT(out, AnyOf(HasSubstr("i386-socketcall errno=1\n"),
                         HasSubstr("i386-socketcall unavailable\n")))
      << out;
  EXPECT_THAT(out,
              AnyOf(HasSubstr("i386-socket errno=1\n"), HasSubstr("i386-socket unavailable\n")))
      << out;
  if (out.find("unavailable") != std::string::npos) {
    RecordProperty("i386", "this kernel runs no i386 system calls; checked by the interpreter");
  }
}

INSTANTIATE_TEST_SUITE_P(Modes, SeccompSandboxTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "userns" : "rootful"; });

}  // namespace
}  // namespace warren::runtime::testing
