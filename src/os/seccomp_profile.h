#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace warren::os {

// A seccomp profile as data, so one description feeds both our BPF compiler (seccomp.h) and
// the OCI config the cold-create bench hands to runc.

enum class SeccompOp { kEqual, kNotEqual, kMaskedEqual };

// One argument condition: (arg[index] & mask) == value for kMaskedEqual.
struct SeccompArg {
  unsigned index = 0;
  SeccompOp op = SeccompOp::kEqual;
  uint64_t value = 0;
  uint64_t mask = 0;  // kMaskedEqual only
};

// Syscalls that share an action and conditions. Rules for the same syscall are alternatives
// (OR); the args of one rule must all hold (AND).
struct SeccompRule {
  std::vector<std::string_view> names;
  std::vector<SeccompArg> args;
  int errno_ret = 0;  // 0 allows the call; otherwise it fails with this errno
};

struct SeccompProfile {
  int default_errno = 1;  // EPERM for every call no rule matches
  std::vector<SeccompRule> rules;
};

// Docker's default profile (moby profiles/seccomp/default.json) for x86: the unconditional
// allowlist, personality() only for the harmless personas, socket() without AF_VSOCK, clone()
// without namespace flags, clone3() answering ENOSYS so libc falls back to clone(), ptrace
// (kernel >= 4.8), and none of the calls Docker gates on capabilities we do not grant
// (mount, unshare, setns, bpf, module loading, reboot, ...). SYS_CHROOT is granted, so
// chroot() is allowed. io_uring is left out, as Docker does since 25.0.
const SeccompProfile& DockerDefaultSeccompProfile();

}  // namespace warren::os
