#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "os/seccomp_profile.h"

namespace warren::os {

// The 32-bit ABIs a filter has rules for, beside x86_64.
struct SeccompAbis {
  bool i386 = true;
  bool x32 = true;
};

// A seccomp filter compiled to classic BPF. Compiling with libseccomp costs milliseconds, so a
// profile is compiled once per process and the program is loaded in each sandbox's child
// with seccomp(2), which is async-signal-safe. Loading costs about 2 µs per instruction here
// (the kernel checks and JITs it), so a shorter program starts every sandbox sooner.
// Immutable after construction, so it may be shared by any number of threads.
class SeccompProgram {
 public:
  explicit SeccompProgram(std::vector<sock_filter> filter, std::vector<std::string> unknown = {});

  size_t instructions() const { return filter_.size(); }
  // The classic BPF program as loaded (tests run it through os/testing/seccomp_sim.h).
  const std::vector<sock_filter>& filter() const { return filter_; }
  // Syscall names of the profile this libseccomp does not know (left to the default action).
  const std::vector<std::string>& unknown_syscalls() const { return unknown_; }

  // Child side: installs the filter on the calling thread with seccomp(SECCOMP_SET_MODE_FILTER).
  // Requires no_new_privs (or CAP_SYS_ADMIN). Returns 0 or -errno. Async-signal-safe.
  int LoadRaw() const noexcept;

 private:
  std::vector<sock_filter> filter_;
  std::vector<std::string> unknown_;
};

// The 32-bit ABIs the running kernel serves: x32 unless a call with bit 30 set is ENOSYS, i386
// when `int $0x80` from a child returns (a kernel without ia32 emulation faults). Probed once.
SeccompAbis KernelSeccompAbis();

// Compiles `profile` for x86_64 plus the x86 and x32 ABIs of `abis` (all, as Docker does), so
// 32-bit binaries meet the same rules. A call on an ABI left out is refused with ENOSYS, what a
// kernel without that ABI answers. Syscall names libseccomp does not know are skipped (they get
// the default action) and listed in unknown_syscalls(). Without x32, each ABI is compiled by
// hand (seccomp_section.h: Docker's profile in 143 instructions for x86_64, 403 with i386,
// against libseccomp's 352 and 811).
Result<SeccompProgram> CompileSeccompProfile(const SeccompProfile& profile, SeccompAbis abis = {});

// The same profile compiled by libseccomp alone for every ABI of `abis`: what hosts with x32
// load, and the reference the hand-compiled sections are tested against.
Result<SeccompProgram> CompileSeccompProfileWithLibseccomp(const SeccompProfile& profile,
                                                           SeccompAbis abis = {});

// DockerDefaultSeccompProfile compiled on first use for the ABIs the kernel serves (a 32-bit
// section the kernel can never run is ~2.2 µs of every sandbox start per instruction); later
// calls return the same program. Thread-safe.
Result<const SeccompProgram*> DockerDefaultSeccompProgram();

}  // namespace warren::os
