#include "os/seccomp.h"

#include <errno.h>
#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <utility>

#include "base/unique_fd.h"
#include "os/seccomp_section.h"

namespace warren::os {
namespace {

struct CtxDeleter {
  void operator()(scmp_filter_ctx ctx) const { seccomp_release(ctx); }
};
using Ctx = std::unique_ptr<void, CtxDeleter>;

scmp_arg_cmp ToCmp(const SeccompArg& a) {
  switch (a.op) {
    case SeccompOp::kEqual:
      return SCMP_CMP(a.index, SCMP_CMP_EQ, a.value);
    case SeccompOp::kNotEqual:
      return SCMP_CMP(a.index, SCMP_CMP_NE, a.value);
    case SeccompOp::kMaskedEqual:
      return SCMP_CMP(a.index, SCMP_CMP_MASKED_EQ, a.mask, a.value);
  }
  return SCMP_CMP(a.index, SCMP_CMP_EQ, a.value);
}

// An i386 system call from 64-bit code (`int $0x80`): seccomp sees AUDIT_ARCH_I386.
long I386Getpid() {
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

SeccompAbis ProbeKernelAbis() {
  SeccompAbis abis;
  abis.x32 = !(syscall(long{kSeccompX32Bit} | SYS_getpid) < 0 && errno == ENOSYS);
  // In a child: without ia32 emulation the instruction faults.
  pid_t child = fork();
  if (child == 0) _exit(I386Getpid() > 0 ? 0 : 1);
  int status = 0;
  if (child < 0) return abis;  // keep the rules: a filter too long is only slower
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  abis.i386 = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  return abis;
}

// The program run before libseccomp's: the profile's i386_first rules on the i386 ABI (when
// kept) and its native_first rules on x86_64 and x32, in order; then libseccomp's program.
Result<std::vector<sock_filter>> Prologue(const SeccompProfile& profile, SeccompAbis abis) {
  // Names are checked on every ABI: a profile must not depend on the host it compiles on.
  ASSIGN_OR_RETURN(std::vector<sock_filter> out,
                   CompileSeccompFirstRules(profile.i386_first, SeccompAbi::kI386, false));
  if (!abis.i386) out.clear();
  ASSIGN_OR_RETURN(std::vector<sock_filter> native,
                   CompileSeccompFirstRules(profile.native_first, SeccompAbi::kX8664, abis.x32));
  out.insert(out.end(), native.begin(), native.end());
  return out;
}

}  // namespace

SeccompProgram::SeccompProgram(std::vector<sock_filter> filter, std::vector<std::string> unknown)
    : filter_(std::move(filter)), unknown_(std::move(unknown)) {}

int SeccompProgram::LoadRaw() const noexcept {
  sock_fprog prog;
  prog.len = static_cast<unsigned short>(filter_.size());
  prog.filter = const_cast<sock_filter*>(filter_.data());
  if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) return -errno;
  return 0;
}

SeccompAbis KernelSeccompAbis() {
  static const SeccompAbis abis = ProbeKernelAbis();
  return abis;
}

namespace {

// libseccomp's program for x86_64 and the 32-bit ABIs of `abis`, a call on any other ABI
// answered ENOSYS, as a kernel without it answers, rather than libseccomp's default of killing
// the caller.
Result<std::vector<sock_filter>> LibseccompProgram(const SeccompProfile& profile, SeccompAbis abis,
                                                   std::vector<std::string>& unknown) {
  Ctx ctx(seccomp_init(SCMP_ACT_ERRNO(static_cast<uint32_t>(profile.default_errno))));
  if (!ctx) return InternalError("seccomp_init failed");
  if (int rc = seccomp_attr_set(ctx.get(), SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_ERRNO(ENOSYS));
      rc != 0) {
    return ErrnoError("seccomp bad-arch action", -rc);
  }
  for (auto [arch, kept] : {std::pair{SCMP_ARCH_X86, abis.i386}, {SCMP_ARCH_X32, abis.x32}}) {
    if (!kept) continue;
    int rc = seccomp_arch_add(ctx.get(), arch);
    if (rc != 0 && rc != -EEXIST) return ErrnoError("seccomp_arch_add", -rc);
  }
  // We set no_new_privs ourselves in the child; the exported program must not depend on it.
  seccomp_attr_set(ctx.get(), SCMP_FLTATR_CTL_NNP, 0);

  for (const SeccompRule& rule : profile.rules) {
    uint32_t action = rule.errno_ret == 0 ? SCMP_ACT_ALLOW
                                          : SCMP_ACT_ERRNO(static_cast<uint32_t>(rule.errno_ret));
    std::vector<scmp_arg_cmp> cmps;
    for (const SeccompArg& a : rule.args) cmps.push_back(ToCmp(a));
    for (std::string_view name : rule.names) {
      std::string n(name);
      int nr = seccomp_syscall_resolve_name(n.c_str());
      if (nr == __NR_SCMP_ERROR) {
        unknown.push_back(n);
        continue;
      }
      int rc = seccomp_rule_add_array(ctx.get(), action, nr, static_cast<unsigned>(cmps.size()),
                                      cmps.empty() ? nullptr : cmps.data());
      // -EACCES/-EOPNOTSUPP: the call does not exist on one of the ABIs; nothing to filter.
      if (rc != 0 && rc != -EACCES && rc != -EOPNOTSUPP && rc != -EEXIST) {
        return ErrnoError(fmt::format("seccomp rule for {}", n), -rc);
      }
    }
  }

  int mfd = memfd_create("seccomp-bpf", MFD_CLOEXEC);
  if (mfd < 0) return ErrnoError("memfd_create", errno);
  base::UniqueFd mem(mfd);
  int rc = seccomp_export_bpf(ctx.get(), mfd);
  if (rc != 0) return ErrnoError("seccomp_export_bpf", -rc);
  off_t size = lseek(mfd, 0, SEEK_END);
  if (size <= 0 || size % static_cast<off_t>(sizeof(sock_filter)) != 0) {
    return InternalError(fmt::format("seccomp_export_bpf wrote {} bytes", size));
  }
  std::vector<sock_filter> filter(static_cast<size_t>(size) / sizeof(sock_filter));
  if (pread(mfd, filter.data(), static_cast<size_t>(size), 0) != size) {
    return ErrnoError("read exported seccomp program", errno);
  }
  return filter;
}

Result<SeccompProgram> Finished(std::vector<sock_filter> filter, std::vector<std::string> unknown) {
  if (filter.size() > BPF_MAXINSNS) {
    return InternalError(
        fmt::format("seccomp program has {} instructions (max {})", filter.size(), BPF_MAXINSNS));
  }
  return SeccompProgram(std::move(filter), std::move(unknown));
}

}  // namespace

Result<SeccompProgram> CompileSeccompProfile(const SeccompProfile& profile, SeccompAbis abis) {
  // x32 calls share x86_64's audit arch and rules, which libseccomp compiles together.
  if (abis.x32) return CompileSeccompProfileWithLibseccomp(profile, abis);
  // A section per ABI the kernel serves, then ENOSYS for any other, as a kernel without it
  // answers.
  std::vector<std::string> unknown, again;  // the same names, listed once
  ASSIGN_OR_RETURN(std::vector<sock_filter> filter,
                   CompileSeccompSection(profile, SeccompAbi::kX8664, unknown));
  ASSIGN_OR_RETURN(std::vector<sock_filter> i386,
                   CompileSeccompSection(profile, SeccompAbi::kI386, again));
  if (abis.i386) filter.insert(filter.end(), i386.begin(), i386.end());
  filter.push_back(BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
  return Finished(std::move(filter), std::move(unknown));
}

Result<SeccompProgram> CompileSeccompProfileWithLibseccomp(const SeccompProfile& profile,
                                                           SeccompAbis abis) {
  std::vector<std::string> unknown;
  ASSIGN_OR_RETURN(std::vector<sock_filter> filter, LibseccompProgram(profile, abis, unknown));
  ASSIGN_OR_RETURN(std::vector<sock_filter> prologue, Prologue(profile, abis));
  filter.insert(filter.begin(), prologue.begin(), prologue.end());
  return Finished(std::move(filter), std::move(unknown));
}

Result<const SeccompProgram*> DockerDefaultSeccompProgram() {
  static std::once_flag once;
  static std::unique_ptr<SeccompProgram> program;
  static Status error;
  std::call_once(once, [] {
    auto compiled = CompileSeccompProfile(DockerDefaultSeccompProfile(), KernelSeccompAbis());
    if (compiled.ok()) {
      program = std::make_unique<SeccompProgram>(std::move(compiled).value());
    } else {
      error = compiled.status();
    }
  });
  if (!program) return error;
  return static_cast<const SeccompProgram*>(program.get());
}

}  // namespace warren::os
