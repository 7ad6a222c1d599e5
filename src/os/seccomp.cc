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

// x32 shares AUDIT_ARCH_X86_64 and sets this bit of the call number.
constexpr uint32_t kX32Bit = 0x40000000;

sock_filter Stmt(uint16_t code, uint32_t k) { return BPF_STMT(code, k); }
sock_filter Jump(uint16_t code, uint32_t k, uint8_t jt, uint8_t jf) {
  return BPF_JUMP(code, k, jt, jf);
}

// The system call numbers `name` has on the ABIs behind `audit_arch`: i386's, or for x86_64
// both x86_64's and x32's (x32 shares AUDIT_ARCH_X86_64 and sets bit 30 of the number).
Result<std::vector<uint32_t>> NumbersOf(const std::string& name, uint32_t audit_arch, bool x32) {
  std::vector<uint32_t> out;
  if (audit_arch == AUDIT_ARCH_I386) {
    int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86, name.c_str());
    if (nr < 0) return InvalidArgumentError(fmt::format("{} is not an i386 system call", name));
    out.push_back(static_cast<uint32_t>(nr));
    return out;
  }
  int nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str());
  if (nr < 0) return InvalidArgumentError(fmt::format("{} is not an x86_64 system call", name));
  out.push_back(static_cast<uint32_t>(nr));
  int x32_nr = x32 ? seccomp_syscall_resolve_name_arch(SCMP_ARCH_X32, name.c_str()) : -1;
  if (x32_nr >= 0) out.push_back(static_cast<uint32_t>(x32_nr) | kX32Bit);
  return out;
}

// One hand-compiled rule as classic BPF: returns the rule's action when the call and every
// argument condition match, else falls through to the instruction after it. One block per
// system call number. Arguments compare their low 32 bits: i386's are 32 bits wide, and the
// x86_64 calls these rules are for (ioctl's request) take an int the kernel truncates to 32
// bits, so a caller's high bits must not steer around the rule.
Status AppendRule(const SeccompRule& rule, uint32_t audit_arch, bool x32,
                  std::vector<sock_filter>& out) {
  struct Exit {
    size_t at;     // index of a conditional jump in `block`
    bool on_true;  // whether its true branch (else its false branch) leaves the block
  };
  for (std::string_view name : rule.names) {
    std::string n(name);
    ASSIGN_OR_RETURN(std::vector<uint32_t> numbers, NumbersOf(n, audit_arch, x32));
    for (uint32_t nr : numbers) {
      std::vector<sock_filter> block;
      std::vector<Exit> exits;
      // Reloaded in each block: argument loads overwrite A.
      block.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)));
      block.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, nr, 0, 0));
      exits.push_back({block.size() - 1, false});
      for (const SeccompArg& a : rule.args) {
        if (a.index >= 6)
          return InvalidArgumentError(fmt::format("{}: no argument {}", n, a.index));
        // The low half of args[i] (little endian).
        block.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS,
                             static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * a.index)));
        if (a.op == SeccompOp::kMaskedEqual) {
          block.push_back(Stmt(BPF_ALU | BPF_AND | BPF_K, static_cast<uint32_t>(a.mask)));
        }
        block.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, static_cast<uint32_t>(a.value), 0, 0));
        exits.push_back({block.size() - 1, a.op == SeccompOp::kNotEqual});
      }
      block.push_back(Stmt(BPF_RET | BPF_K, SeccompActionOf(rule)));
      for (const Exit& e : exits) {
        size_t distance = block.size() - (e.at + 1);  // to the first instruction after the block
        if (distance > 255) return InvalidArgumentError(fmt::format("{}: rule too long", n));
        (e.on_true ? block[e.at].jt : block[e.at].jf) = static_cast<uint8_t>(distance);
      }
      out.insert(out.end(), block.begin(), block.end());
    }
  }
  return Status::Ok();
}

// An i386 system call from 64-bit code (`int $0x80`): seccomp sees AUDIT_ARCH_I386.
long I386Getpid() {
  long ret;
  asm volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
  return ret;
}

SeccompAbis ProbeKernelAbis() {
  SeccompAbis abis;
  abis.x32 = !(syscall(long{kX32Bit} | SYS_getpid) < 0 && errno == ENOSYS);
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

// `rules` for one ABI, skipped as a whole on any other.
Status AppendSection(const std::vector<SeccompRule>& rules, uint32_t audit_arch, bool x32,
                     std::vector<sock_filter>& out) {
  std::vector<sock_filter> body;
  for (const SeccompRule& rule : rules) RETURN_IF_ERROR(AppendRule(rule, audit_arch, x32, body));
  if (body.empty()) return Status::Ok();
  if (body.size() > 255) return InvalidArgumentError("first rules for one ABI are too long");
  out.push_back(Stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)));
  out.push_back(Jump(BPF_JMP | BPF_JEQ | BPF_K, audit_arch, 0, static_cast<uint8_t>(body.size())));
  out.insert(out.end(), body.begin(), body.end());
  return Status::Ok();
}

// The program run before libseccomp's: the profile's i386_first rules on the i386 ABI (when
// kept) and its native_first rules on x86_64 and x32, in order; then libseccomp's program.
Result<std::vector<sock_filter>> Prologue(const SeccompProfile& profile, SeccompAbis abis) {
  std::vector<sock_filter> out;
  // Names are checked on every ABI: a profile must not depend on the host it compiles on.
  std::vector<sock_filter> left_out;
  RETURN_IF_ERROR(
      AppendSection(profile.i386_first, AUDIT_ARCH_I386, false, abis.i386 ? out : left_out));
  RETURN_IF_ERROR(AppendSection(profile.native_first, AUDIT_ARCH_X86_64, abis.x32, out));
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
  filter.push_back(Stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS));
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
