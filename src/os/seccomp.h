#pragma once

#include <linux/filter.h>

#include <string>
#include <vector>

#include "base/result.h"
#include "os/seccomp_profile.h"

namespace warren::os {

// A seccomp filter compiled to classic BPF. Compiling with libseccomp costs milliseconds, so a
// profile is compiled once per process and the program is loaded in each sandbox's child
// with seccomp(2), which is cheap and async-signal-safe. Immutable after construction, so it
// may be shared by any number of threads.
class SeccompProgram {
 public:
  explicit SeccompProgram(std::vector<sock_filter> filter);

  size_t instructions() const { return filter_.size(); }
  // The classic BPF program as loaded (tests run it through os/testing/seccomp_sim.h).
  const std::vector<sock_filter>& filter() const { return filter_; }
  // Syscall names of the profile this libseccomp does not know (left to the default action).
  const std::vector<std::string>& unknown_syscalls() const { return unknown_; }

  // Child side: installs the filter on the calling thread with seccomp(SECCOMP_SET_MODE_FILTER).
  // Requires no_new_privs (or CAP_SYS_ADMIN). Returns 0 or -errno. Async-signal-safe.
  int LoadRaw() const noexcept;

 private:
  friend Result<SeccompProgram> CompileSeccompProfile(const SeccompProfile&);
  std::vector<sock_filter> filter_;
  std::vector<std::string> unknown_;
};

// Compiles `profile` for x86_64 plus the x86 and x32 ABIs (as Docker does), so 32-bit
// binaries meet the same rules. Syscall names libseccomp does not know are skipped (they get
// the default action) and listed in unknown_syscalls().
Result<SeccompProgram> CompileSeccompProfile(const SeccompProfile& profile);

// DockerDefaultSeccompProfile compiled on first use; later calls return the same program.
// Thread-safe.
Result<const SeccompProgram*> DockerDefaultSeccompProgram();

}  // namespace warren::os
