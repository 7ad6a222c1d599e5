#pragma once

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "base/result.h"

namespace warren::os::testing {

// Runs a seccomp program (classic BPF) on one system call, as the kernel would, and returns
// its action (SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | errno, ...). Lets tests ask what a filter
// decides for an ABI this machine cannot execute (the i386 ABI under a hypervisor without
// 32-bit support, x32 on kernels without it). InvalidArgument for an instruction the kernel's
// seccomp checker would refuse, a jump out of the program or a missing return. Pure.
Result<uint32_t> RunSeccompFilter(const std::vector<sock_filter>& program,
                                  const seccomp_data& call);

// A seccomp_data for `nr` on `arch` (AUDIT_ARCH_*) with the given arguments.
seccomp_data SeccompCall(uint32_t arch, int nr, std::initializer_list<uint64_t> args = {});

}  // namespace warren::os::testing
