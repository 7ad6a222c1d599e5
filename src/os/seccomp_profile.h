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
  // Rules for the i386 ABI (32-bit binaries, `int $0x80`) checked before `rules`, compiled by
  // hand because libseccomp cannot express them: it turns a socket() rule into an
  // unconditional allow of socketcall(SYS_SOCKET, ...) there (the family sits in memory a
  // filter cannot read), and refuses a competing rule for that call. Names are resolved on
  // i386 only; args compare the low 32 bits. Not part of the OCI form (runc's libseccomp
  // would produce the same hole).
  std::vector<SeccompRule> i386_first;
  // Rules for x86_64 and x32 checked before `rules`, compiled the same way: for a call the
  // allowlist grants whole (ioctl) but with a few arguments that must still be refused, which
  // libseccomp will not add beside an unconditional allow. Args compare the low 32 bits. Not
  // part of the OCI form.
  std::vector<SeccompRule> native_first;
};

// Docker's default profile (moby profiles/seccomp/default.json) for x86: the unconditional
// allowlist, personality() only for the harmless personas, socket() without AF_VSOCK, clone()
// without namespace flags, clone3() answering ENOSYS so libc falls back to clone(), ptrace
// (kernel >= 4.8), and none of the calls Docker gates on capabilities we do not grant
// (mount, unshare, setns, bpf, module loading, reboot, ...). SYS_CHROOT is granted, so
// chroot() is allowed. io_uring is left out, as Docker does since 25.0.
//
// Where Docker's profile leaves the 32-bit multiplexers open, this one closes them, so no
// ABI reaches what the socket() filter refuses: socketcall is allowed only for the sub-calls
// the profile allows directly (bind, connect, ...: libseccomp derives those), and
// socketcall(SYS_SOCKET) fails with EPERM whatever the family, since the filter cannot read
// it (32-bit programs whose libc makes sockets through socketcall cannot make any; direct
// socket() on i386 is filtered like x86_64's). ipc() is allowed only for the twelve SysV IPC
// operations the profile allows directly. x32 calls meet the x86_64 rules (libseccomp).
//
// And ioctl() refuses the btrfs requests that make a subvolume or snapshot: a sandbox's
// files live in a btrfs subvolume whose quota is its ephemeral-storage, and a subvolume made
// inside it (in an emptyDir, say) would be a new quota group outside that limit.
const SeccompProfile& DockerDefaultSeccompProfile();

}  // namespace warren::os
