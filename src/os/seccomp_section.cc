#include "os/seccomp_section.h"

#include <fmt/format.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <seccomp.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>

namespace warren::os {
namespace {

constexpr uint32_t ArgLow(unsigned index) {
  return static_cast<uint32_t>(offsetof(seccomp_data, args) + 8 * index);
}
constexpr uint32_t ArgHigh(unsigned index) { return ArgLow(index) + 4; }

// What differs between the ABIs a section is compiled for.
struct AbiFacts {
  uint32_t audit_arch;
  bool wide_args;  // arguments are 64 bits wide
};
AbiFacts FactsOf(SeccompAbi abi) {
  return abi == SeccompAbi::kX8664 ? AbiFacts{AUDIT_ARCH_X86_64, true}
                                   : AbiFacts{AUDIT_ARCH_I386, false};
}

// i386's multiplexers: socketcall(call, args) and ipc(call, ...), and the calls they reach by
// their first argument (linux/net.h SYS_*, linux/ipc.h).
constexpr uint32_t kI386Socketcall = 102, kI386Ipc = 117;
constexpr std::pair<std::string_view, uint32_t> kSocketcalls[] = {
    {"socket", 1},    {"bind", 2},        {"connect", 3},     {"listen", 4},
    {"accept", 5},    {"getsockname", 6}, {"getpeername", 7}, {"socketpair", 8},
    {"send", 9},      {"recv", 10},       {"sendto", 11},     {"recvfrom", 12},
    {"shutdown", 13}, {"setsockopt", 14}, {"getsockopt", 15}, {"sendmsg", 16},
    {"recvmsg", 17},  {"accept4", 18},    {"recvmmsg", 19},   {"sendmmsg", 20}};
constexpr std::pair<std::string_view, uint32_t> kIpcCalls[] = {
    {"semop", 1},   {"semget", 2},  {"semctl", 3},  {"semtimedop", 4},
    {"msgsnd", 11}, {"msgrcv", 12}, {"msgget", 13}, {"msgctl", 14},
    {"shmat", 21},  {"shmdt", 22},  {"shmget", 23}, {"shmctl", 24}};

// The call's own number on the ABI, or -1. On i386 libseccomp resolves a name the multiplexers
// reach to a pseudo-number (its socketcall or ipc form), even where the kernel also has a
// call of its own for it (bind is 361 since Linux 4.3): the table is read the other way.
int NumberOn(SeccompAbi abi, const std::string& name) {
  if (abi == SeccompAbi::kX8664) {
    return std::max(-1, seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name.c_str()));
  }
  static const std::map<std::string, int, std::less<>> i386 = [] {
    std::map<std::string, int, std::less<>> table;
    for (int nr = 0; nr < 1024; ++nr) {
      std::unique_ptr<char, decltype(&free)> n(seccomp_syscall_resolve_num_arch(SCMP_ARCH_X86, nr),
                                               &free);
      if (n) table.emplace(n.get(), nr);
    }
    return table;
  }();
  auto it = i386.find(name);
  return it == i386.end() ? -1 : it->second;
}

// The multiplexer and sub-call that reach `name` on i386, if one does.
std::optional<std::pair<uint32_t, uint32_t>> MultiplexedOf(std::string_view name) {
  for (const auto& [call, sub] : kSocketcalls) {
    if (call == name) return std::pair{kI386Socketcall, sub};
  }
  for (const auto& [call, sub] : kIpcCalls) {
    if (call == name) return std::pair{kI386Ipc, sub};
  }
  return std::nullopt;
}

// Classic BPF with forward jumps to labels, resolved when the program is done: a conditional
// jump reaches 255 instructions ahead, an unconditional one any distance.
class Assembler {
 public:
  using Label = size_t;
  // The instruction right after the jump.
  static constexpr Label kNext = std::numeric_limits<size_t>::max();

  Label NewLabel() {
    labels_.push_back(kUnbound);
    return labels_.size() - 1;
  }
  void Bind(Label label) { labels_[label] = code_.size(); }

  void Load(uint32_t offset) { code_.push_back(BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offset)); }
  void And(uint32_t mask) { code_.push_back(BPF_STMT(BPF_ALU | BPF_AND | BPF_K, mask)); }
  void Return(uint32_t action) { code_.push_back(BPF_STMT(BPF_RET | BPF_K, action)); }
  void Goto(Label target) {
    fixups_.push_back({code_.size(), target, Slot::kAlways});
    code_.push_back(BPF_STMT(BPF_JMP | BPF_JA, 0));
  }
  // To `yes` when `A op k` holds, else to `no` (BPF_JEQ, BPF_JGE, BPF_JGT: unsigned).
  void Jump(uint16_t op, uint32_t k, Label yes, Label no) {
    if (yes != kNext) fixups_.push_back({code_.size(), yes, Slot::kTrue});
    if (no != kNext) fixups_.push_back({code_.size(), no, Slot::kFalse});
    code_.push_back(BPF_JUMP(BPF_JMP | op | BPF_K, k, 0, 0));
  }

  Result<std::vector<sock_filter>> Finish() && {
    for (const Fixup& f : fixups_) {
      const size_t target = labels_[f.target];
      if (target == kUnbound || target <= f.at) {
        return InternalError("seccomp section: a jump to an unbound or earlier label");
      }
      const size_t distance = target - (f.at + 1);
      sock_filter& insn = code_[f.at];
      if (f.slot == Slot::kAlways) {
        insn.k = static_cast<uint32_t>(distance);
      } else if (distance > 255) {
        return InvalidArgumentError(
            fmt::format("seccomp section: a conditional jump of {} instructions", distance));
      } else {
        (f.slot == Slot::kTrue ? insn.jt : insn.jf) = static_cast<uint8_t>(distance);
      }
    }
    return std::move(code_);
  }

 private:
  static constexpr size_t kUnbound = std::numeric_limits<size_t>::max();
  enum class Slot { kTrue, kFalse, kAlways };
  struct Fixup {
    size_t at;
    Label target;
    Slot slot;
  };
  std::vector<sock_filter> code_;
  std::vector<size_t> labels_;
  std::vector<Fixup> fixups_;
};
using Label = Assembler::Label;

// Falls through when `arg` holds for the call, else jumps to `fail`. `wide`: compare all 64
// bits (two words); otherwise the low 32 only.
void EmitCondition(Assembler& a, const SeccompArg& arg, bool wide, Label fail) {
  const auto low_value = static_cast<uint32_t>(arg.value);
  const auto high_value = static_cast<uint32_t>(arg.value >> 32);
  switch (arg.op) {
    case SeccompOp::kEqual:
      if (wide) {
        a.Load(ArgHigh(arg.index));
        a.Jump(BPF_JEQ, high_value, Assembler::kNext, fail);
      }
      a.Load(ArgLow(arg.index));
      a.Jump(BPF_JEQ, low_value, Assembler::kNext, fail);
      return;
    case SeccompOp::kNotEqual: {
      Label holds = a.NewLabel();
      if (wide) {
        a.Load(ArgHigh(arg.index));
        a.Jump(BPF_JEQ, high_value, Assembler::kNext, holds);
      }
      a.Load(ArgLow(arg.index));
      a.Jump(BPF_JEQ, low_value, fail, Assembler::kNext);
      a.Bind(holds);
      return;
    }
    case SeccompOp::kMaskedEqual: {
      const auto high_mask = static_cast<uint32_t>(arg.mask >> 32);
      // A high word masked to nothing and compared with nothing always holds.
      if (wide && (high_mask != 0 || high_value != 0)) {
        a.Load(ArgHigh(arg.index));
        a.And(high_mask);
        a.Jump(BPF_JEQ, high_value, Assembler::kNext, fail);
      }
      a.Load(ArgLow(arg.index));
      a.And(static_cast<uint32_t>(arg.mask));
      a.Jump(BPF_JEQ, low_value, Assembler::kNext, fail);
      return;
    }
  }
}

// What the profile says about one call of the ABI.
struct CallRules {
  std::optional<uint32_t> unconditional;
  struct Alternative {
    std::vector<SeccompArg> args;
    uint32_t action;
  };
  std::vector<Alternative> alternatives;  // tried in order; none holding: the default
};

Status CheckArgs(std::string_view name, const std::vector<SeccompArg>& args) {
  for (const SeccompArg& arg : args) {
    if (arg.index >= 6)
      return InvalidArgumentError(fmt::format("{}: no argument {}", name, arg.index));
  }
  return Status::Ok();
}

Status AddRule(std::map<uint32_t, CallRules>& calls, std::string_view name, uint32_t nr,
               const std::vector<SeccompArg>& args, uint32_t action) {
  CallRules& call = calls[nr];
  if (args.empty()) {
    if (call.unconditional && *call.unconditional != action) {
      return InvalidArgumentError(fmt::format("{}: two unconditional actions", name));
    }
    call.unconditional = action;
  } else {
    call.alternatives.push_back({args, action});
  }
  if (call.unconditional && !call.alternatives.empty()) {
    return InvalidArgumentError(
        fmt::format("{}: both an unconditional action and argument rules", name));
  }
  return Status::Ok();
}

Result<std::map<uint32_t, CallRules>> CallsOf(const SeccompProfile& profile, SeccompAbi abi,
                                              std::vector<std::string>& unknown) {
  std::map<uint32_t, CallRules> calls;
  for (const SeccompRule& rule : profile.rules) {
    const uint32_t action = SeccompActionOf(rule);
    for (std::string_view name : rule.names) {
      RETURN_IF_ERROR(CheckArgs(name, rule.args));
      std::string n(name);
      if (seccomp_syscall_resolve_name(n.c_str()) == __NR_SCMP_ERROR) {
        unknown.push_back(n);
        continue;
      }
      if (abi == SeccompAbi::kI386) {
        if (auto via = MultiplexedOf(name)) {
          const SeccompArg sub{0, SeccompOp::kEqual, via->second, 0};
          RETURN_IF_ERROR(AddRule(calls, name, via->first, {sub}, action));
        }
      }
      const int nr = NumberOn(abi, n);
      if (nr < 0) continue;  // no such call on this ABI
      RETURN_IF_ERROR(AddRule(calls, name, static_cast<uint32_t>(nr), rule.args, action));
    }
  }
  return calls;
}

// The ABI's first rules (native_first, i386_first): each rule's call and arguments (low 32
// bits: i386's are 32 bits wide, and the x86_64 call these are for, ioctl, takes a request the
// kernel truncates to 32 bits, so high bits must not steer around a rule) return its action;
// otherwise on. With `x32`, an x86_64 rule also matches its call's x32 number.
Status EmitFirstRules(Assembler& a, const std::vector<SeccompRule>& rules, SeccompAbi abi,
                      bool x32) {
  for (const SeccompRule& rule : rules) {
    for (std::string_view name : rule.names) {
      RETURN_IF_ERROR(CheckArgs(name, rule.args));
      std::string n(name);
      const int nr = NumberOn(abi, n);
      if (nr < 0) {
        return InvalidArgumentError(fmt::format("{} is not an {} system call", n,
                                                abi == SeccompAbi::kX8664 ? "x86_64" : "i386"));
      }
      std::vector<uint32_t> numbers{static_cast<uint32_t>(nr)};
      if (x32 && abi == SeccompAbi::kX8664) {
        const int x32_nr = seccomp_syscall_resolve_name_arch(SCMP_ARCH_X32, n.c_str());
        if (x32_nr >= 0) numbers.push_back(static_cast<uint32_t>(x32_nr) | kSeccompX32Bit);
      }
      for (uint32_t number : numbers) {
        Label next = a.NewLabel();
        a.Load(offsetof(seccomp_data, nr));
        a.Jump(BPF_JEQ, number, Assembler::kNext, next);
        for (const SeccompArg& arg : rule.args) EmitCondition(a, arg, /*wide=*/false, next);
        a.Return(SeccompActionOf(rule));
        a.Bind(next);
      }
    }
  }
  return Status::Ok();
}

// Consecutive numbers (call numbers, or values of an argument) with one action.
struct Run {
  uint32_t first, last, action;
};

// With the call number in A: returns each run's action for a number in it, the default for any
// other, by binary search down to a few runs, then in order. `above_first`: the number is known
// to be at least the first run's start.
void EmitRuns(Assembler& a, std::span<const Run> runs, bool above_first, Label refuse,
              const std::map<uint32_t, Label>& returns) {
  constexpr size_t kScanned = 4;
  if (runs.size() > kScanned) {
    const size_t mid = runs.size() / 2;
    Label upper = a.NewLabel();
    a.Jump(BPF_JGE, runs[mid].first, upper, Assembler::kNext);
    EmitRuns(a, runs.first(mid), above_first, refuse, returns);
    a.Bind(upper);
    EmitRuns(a, runs.subspan(mid), true, refuse, returns);
    return;
  }
  for (size_t i = 0; i < runs.size(); ++i) {
    if (i > 0 || !above_first) a.Jump(BPF_JGE, runs[i].first, Assembler::kNext, refuse);
    a.Jump(BPF_JGT, runs[i].last, Assembler::kNext, returns.at(runs[i].action));
  }
  a.Goto(refuse);  // above the last run here
}

// An alternative that asks one 32-bit argument to equal one value.
bool OneValue(const CallRules::Alternative& alt, const AbiFacts& facts) {
  return !facts.wide_args && alt.args.size() == 1 && alt.args[0].op == SeccompOp::kEqual;
}

// Sorted distinct values as runs of consecutive ones, each with `action`.
std::vector<Run> RunsOf(std::vector<uint32_t> values, uint32_t action) {
  std::sort(values.begin(), values.end());
  std::vector<Run> runs;
  for (uint32_t v : values) {
    if (!runs.empty() && (v == runs.back().last || v == runs.back().last + 1)) {
      runs.back().last = v;
    } else {
      runs.push_back({v, v, action});
    }
  }
  return runs;
}

// A call's argument rules, in order, each returning its action when it holds; the default
// when none does. Falls through for any other call.
void EmitArgumentBlock(Assembler& a, uint32_t nr, const std::vector<CallRules::Alternative>& alts,
                       const AbiFacts& facts, uint32_t fallback) {
  Label next = a.NewLabel();
  a.Load(offsetof(seccomp_data, nr));
  a.Jump(BPF_JEQ, nr, Assembler::kNext, next);
  for (size_t i = 0; i < alts.size();) {
    Label fails = a.NewLabel();
    // Alternatives next to each other that each ask one argument to equal a value, with one
    // action, are one search of their values (a multiplexer's sub-calls): order among them
    // cannot matter.
    size_t group = i + 1;
    while (group < alts.size() && OneValue(alts[group], facts) &&
           alts[group].action == alts[i].action &&
           alts[group].args[0].index == alts[i].args[0].index) {
      ++group;
    }
    if (OneValue(alts[i], facts) && group - i > 2) {
      std::vector<uint32_t> values;
      for (size_t k = i; k < group; ++k) {
        values.push_back(static_cast<uint32_t>(alts[k].args[0].value));
      }
      Label holds = a.NewLabel();
      a.Load(ArgLow(alts[i].args[0].index));
      EmitRuns(a, RunsOf(values, alts[i].action), /*above_first=*/false, fails,
               {{alts[i].action, holds}});
      a.Bind(holds);
      a.Return(alts[i].action);
      a.Bind(fails);
      i = group;
      continue;
    }
    for (const SeccompArg& arg : alts[i].args) EmitCondition(a, arg, facts.wide_args, fails);
    a.Return(alts[i].action);
    a.Bind(fails);
    ++i;
  }
  a.Return(fallback);
  a.Bind(next);
}

// The calls with an unconditional action as runs of consecutive numbers with one action; a
// call with argument rules counts as part of any run, since its own block answers it first.
std::vector<Run> RunsOfCalls(const std::map<uint32_t, CallRules>& calls) {
  std::vector<Run> runs;
  for (const auto& [nr, call] : calls) {
    if (!call.unconditional) continue;
    const uint32_t action = *call.unconditional;
    if (!runs.empty() && runs.back().action == action) {
      bool joined = true;
      for (uint32_t between = runs.back().last + 1; between < nr; ++between) {
        auto it = calls.find(between);
        if (it == calls.end() || it->second.alternatives.empty()) {
          joined = false;
          break;
        }
      }
      if (joined) {
        runs.back().last = nr;
        continue;
      }
    }
    runs.push_back({nr, nr, action});
  }
  return runs;
}

}  // namespace

Result<std::vector<sock_filter>> CompileSeccompSection(const SeccompProfile& profile,
                                                       SeccompAbi abi,
                                                       std::vector<std::string>& unknown) {
  const AbiFacts facts = FactsOf(abi);
  ASSIGN_OR_RETURN(auto calls, CallsOf(profile, abi, unknown));
  const uint32_t fallback =
      SECCOMP_RET_ERRNO | (static_cast<uint32_t>(profile.default_errno) & SECCOMP_RET_DATA);
  Assembler a;
  Label end = a.NewLabel();

  Label ours = a.NewLabel();
  a.Load(offsetof(seccomp_data, arch));
  a.Jump(BPF_JEQ, facts.audit_arch, ours, Assembler::kNext);
  a.Goto(end);
  a.Bind(ours);
  if (abi == SeccompAbi::kX8664) {
    Label native = a.NewLabel();
    a.Load(offsetof(seccomp_data, nr));
    a.Jump(BPF_JGE, kSeccompX32Bit, Assembler::kNext, native);
    // -1, which a tracer sets to skip a call, gets the default as libseccomp gives it.
    a.Jump(BPF_JEQ, 0xffffffff, native, Assembler::kNext);
    a.Return(SECCOMP_RET_ERRNO | ENOSYS);
    a.Bind(native);
  }

  RETURN_IF_ERROR(EmitFirstRules(
      a, abi == SeccompAbi::kX8664 ? profile.native_first : profile.i386_first, abi, false));

  // Calls with argument rules: a block each, every way out of it a return.
  for (const auto& [nr, call] : calls) {
    if (!call.alternatives.empty()) EmitArgumentBlock(a, nr, call.alternatives, facts, fallback);
  }

  // The rest: runs of consecutive numbers with one action.
  const std::vector<Run> runs = RunsOfCalls(calls);
  std::map<uint32_t, Label> returns;
  Label refuse = a.NewLabel();
  returns[fallback] = refuse;
  for (const Run& run : runs) {
    if (!returns.count(run.action)) returns[run.action] = a.NewLabel();
  }
  a.Load(offsetof(seccomp_data, nr));
  EmitRuns(a, runs, /*above_first=*/false, refuse, returns);
  a.Bind(refuse);
  a.Return(fallback);
  for (const auto& [action, label] : returns) {
    if (label == refuse) continue;
    a.Bind(label);
    a.Return(action);
  }
  a.Bind(end);
  return std::move(a).Finish();
}

Result<std::vector<sock_filter>> CompileSeccompFirstRules(const std::vector<SeccompRule>& rules,
                                                          SeccompAbi abi, bool x32) {
  if (rules.empty()) return std::vector<sock_filter>{};
  Assembler a;
  Label end = a.NewLabel();
  a.Load(offsetof(seccomp_data, arch));
  a.Jump(BPF_JEQ, FactsOf(abi).audit_arch, Assembler::kNext, end);
  RETURN_IF_ERROR(EmitFirstRules(a, rules, abi, x32));
  a.Bind(end);
  return std::move(a).Finish();
}

uint32_t SeccompActionOf(const SeccompRule& rule) {
  return rule.errno_ret == 0
             ? SECCOMP_RET_ALLOW
             : SECCOMP_RET_ERRNO | (static_cast<uint32_t>(rule.errno_ret) & SECCOMP_RET_DATA);
}

}  // namespace warren::os
