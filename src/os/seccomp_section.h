#pragma once

#include <linux/filter.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "os/seccomp_profile.h"

namespace warren::os {

// x32 calls carry x86_64's audit arch and this bit in their number.
inline constexpr uint32_t kSeccompX32Bit = 0x40000000;

// The ABIs a section is compiled for.
enum class SeccompAbi { kX8664, kI386 };

// One ABI's part of a profile, compiled by hand into classic BPF (seccomp.h uses it on kernels
// without x32). libseccomp spends an instruction or more on every call the profile names, ~350
// for Docker's allowlist on x86_64 and ~460 on i386; here the calls with unconditional actions
// become runs of consecutive numbers, two compares a run, and loading a filter costs ~2.4 µs
// an instruction in every sandbox's child.
//
// The section reads the call's audit arch first: any other arch jumps past its end, to what
// follows (another section, or a refusal). Every call of its ABI gets its answer inside it: the
// ABI's first rules (`native_first` or `i386_first`: the low 32 bits of each argument), then
// the profile's rules — arguments compared on all 64 bits on x86_64, as libseccomp compares
// them, on the low 32 on i386 — else the profile's default errno. As libseccomp derives them on
// i386, a call the profile names that the socketcall() or ipc() multiplexer also reaches is
// granted there too, for that sub-call (its own argument rules cannot be read there). On
// x86_64 a call number with the x32 bit (or any above it but -1) is ENOSYS, what a kernel
// without x32 answers. Names libseccomp does not know are skipped and appended to `unknown`;
// a call without a number on the ABI (chown32 on x86_64) is skipped. A call given both an
// unconditional action and argument rules, or two different unconditional actions, is an
// InvalidArgument.
Result<std::vector<sock_filter>> CompileSeccompSection(const SeccompProfile& profile,
                                                       SeccompAbi abi,
                                                       std::vector<std::string>& unknown);

// A profile's first rules for one ABI (`native_first`, `i386_first`) as a block run before
// libseccomp's program: on a call of that ABI whose number and arguments (low 32 bits) match a
// rule, its action; on anything else, on past the block. With `x32`, x86_64 rules also match
// their calls' x32 numbers. Empty for no rules; a name without a number on the ABI, or a block
// too long for a conditional jump over it, is an InvalidArgument.
Result<std::vector<sock_filter>> CompileSeccompFirstRules(const std::vector<SeccompRule>& rules,
                                                          SeccompAbi abi, bool x32);

// The seccomp return value of a rule: SECCOMP_RET_ALLOW, or SECCOMP_RET_ERRNO with its errno.
uint32_t SeccompActionOf(const SeccompRule& rule);

}  // namespace warren::os
