#include "os/device_policy.h"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace warren::os {
namespace {

long Bpf(int cmd, bpf_attr& attr) { return syscall(SYS_bpf, cmd, &attr, sizeof attr); }

bpf_insn Insn(uint8_t code, uint8_t dst, uint8_t src, int16_t off, int32_t imm) {
  bpf_insn i;
  memset(&i, 0, sizeof i);
  i.code = code;
  i.dst_reg = dst & 0xf;
  i.src_reg = src & 0xf;
  i.off = off;
  i.imm = imm;
  return i;
}

// Registers: r1 = ctx; r2 = device type; r3 = access; r4 = major; r5 = minor; r6 scratch.
constexpr uint8_t kCtx = 1, kType = 2, kAccess = 3, kMajor = 4, kMinor = 5, kScratch = 6;

}  // namespace

const std::vector<DeviceRule>& DefaultDeviceRules() {
  static const std::vector<DeviceRule> rules = [] {
    const unsigned rwm = kDeviceRead | kDeviceWrite | kDeviceMknod;
    return std::vector<DeviceRule>{
        {'c', -1, -1, kDeviceMknod},
        {'b', -1, -1, kDeviceMknod},  // mknod, as runc
        {'c', 1, 3, rwm},             // null
        {'c', 1, 5, rwm},             // zero
        {'c', 1, 7, rwm},             // full
        {'c', 1, 8, rwm},             // random
        {'c', 1, 9, rwm},             // urandom
        {'c', 5, 0, rwm},             // tty
        {'c', 5, 2, rwm},             // ptmx
        {'c', 136, -1, rwm},          // pts/*
    };
  }();
  return rules;
}

std::string DeviceRuleText(const DeviceRule& rule) {
  auto number = [](int64_t n) { return n < 0 ? std::string("*") : std::to_string(n); };
  std::string access;
  if (rule.access & kDeviceRead) access += 'r';
  if (rule.access & kDeviceWrite) access += 'w';
  if (rule.access & kDeviceMknod) access += 'm';
  return fmt::format("{} {}:{} {}", rule.type, number(rule.major), number(rule.minor), access);
}

std::vector<bpf_insn> CompileDeviceProgram(const std::vector<DeviceRule>& rules) {
  std::vector<bpf_insn> p;
  const int16_t kAccessOff = offsetof(bpf_cgroup_dev_ctx, access_type);
  p.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, kType, kCtx, kAccessOff, 0));
  p.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, kType, 0, 0, 0xffff));
  p.push_back(Insn(BPF_LDX | BPF_MEM | BPF_W, kAccess, kCtx, kAccessOff, 0));
  p.push_back(Insn(BPF_ALU | BPF_RSH | BPF_K, kAccess, 0, 0, 16));
  p.push_back(
      Insn(BPF_LDX | BPF_MEM | BPF_W, kMajor, kCtx, offsetof(bpf_cgroup_dev_ctx, major), 0));
  p.push_back(
      Insn(BPF_LDX | BPF_MEM | BPF_W, kMinor, kCtx, offsetof(bpf_cgroup_dev_ctx, minor), 0));
  for (const DeviceRule& rule : rules) {
    // Each condition that fails jumps past the rule's "return 1" to the next rule.
    std::vector<bpf_insn> block;
    if (rule.type != 'a') {
      int32_t type = rule.type == 'b' ? BPF_DEVCG_DEV_BLOCK : BPF_DEVCG_DEV_CHAR;
      block.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, kType, 0, 0, type));
    }
    // Every access asked for must be one the rule grants: (access & ~granted) == 0.
    block.push_back(Insn(BPF_ALU | BPF_MOV | BPF_X, kScratch, kAccess, 0, 0));
    block.push_back(Insn(BPF_ALU | BPF_AND | BPF_K, kScratch, 0, 0,
                         static_cast<int32_t>(~rule.access & 0xffff)));
    block.push_back(Insn(BPF_JMP | BPF_JNE | BPF_K, kScratch, 0, 0, 0));
    if (rule.major >= 0) {
      block.push_back(
          Insn(BPF_JMP | BPF_JNE | BPF_K, kMajor, 0, 0, static_cast<int32_t>(rule.major)));
    }
    if (rule.minor >= 0) {
      block.push_back(
          Insn(BPF_JMP | BPF_JNE | BPF_K, kMinor, 0, 0, static_cast<int32_t>(rule.minor)));
    }
    block.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 1));
    block.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
    for (size_t i = 0; i < block.size(); ++i) {
      if (block[i].code == (BPF_JMP | BPF_JNE | BPF_K)) {
        block[i].off = static_cast<int16_t>(block.size() - (i + 1));
      }
    }
    p.insert(p.end(), block.begin(), block.end());
  }
  p.push_back(Insn(BPF_ALU64 | BPF_MOV | BPF_K, 0, 0, 0, 0));
  p.push_back(Insn(BPF_JMP | BPF_EXIT, 0, 0, 0, 0));
  return p;
}

namespace {

// BPF_PROG_LOAD of the program; with a log buffer the verifier explains a refusal (but the
// load fails with ENOSPC when the log outgrows it, so the first try has none).
long LoadDeviceProgram(const std::vector<bpf_insn>& insns, char* log, uint32_t log_size) {
  static char license[] = "Apache-2.0";
  bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  attr.insns = reinterpret_cast<uint64_t>(insns.data());
  attr.insn_cnt = static_cast<uint32_t>(insns.size());
  attr.license = reinterpret_cast<uint64_t>(license);
  if (log != nullptr) {
    attr.log_buf = reinterpret_cast<uint64_t>(log);
    attr.log_size = log_size;
    attr.log_level = 1;
  }
  return Bpf(BPF_PROG_LOAD, attr);
}

}  // namespace

Result<int> DefaultDeviceProgram() {
  static std::once_flag once;
  static base::UniqueFd program;
  static Status error;
  std::call_once(once, [] {
    std::vector<bpf_insn> insns = CompileDeviceProgram(DefaultDeviceRules());
    long fd = LoadDeviceProgram(insns, nullptr, 0);
    if (fd >= 0) {
      program = base::UniqueFd(static_cast<int>(fd));
      return;
    }
    int err = errno;
    std::string log(16384, '\0');
    LoadDeviceProgram(insns, log.data(), static_cast<uint32_t>(log.size()));
    log.resize(strlen(log.c_str()));
    error = FailedPreconditionError(
        fmt::format("cannot load the cgroup v2 device filter (BPF_PROG_TYPE_CGROUP_DEVICE): {}{}{}",
                    strerror(err), log.empty() ? "" : "; verifier: ", log));
  });
  if (!program) return error;
  return program.get();
}

Status AttachDeviceProgram(int cgroup_dir_fd, int program_fd) {
  bpf_attr attr;
  memset(&attr, 0, sizeof attr);
  attr.target_fd = static_cast<uint32_t>(cgroup_dir_fd);
  attr.attach_bpf_fd = static_cast<uint32_t>(program_fd);
  attr.attach_type = BPF_CGROUP_DEVICE;
  attr.attach_flags = 0;  // nothing below may replace or loosen it
  if (Bpf(BPF_PROG_ATTACH, attr) != 0) return ErrnoError("attach the device filter", errno);
  return Status::Ok();
}

}  // namespace warren::os
