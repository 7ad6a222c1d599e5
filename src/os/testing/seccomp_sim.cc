#include "os/testing/seccomp_sim.h"

#include <fmt/format.h>

#include <cstddef>
#include <cstring>

namespace warren::os::testing {

seccomp_data SeccompCall(uint32_t arch, int nr, std::initializer_list<uint64_t> args) {
  seccomp_data d;
  memset(&d, 0, sizeof d);
  d.nr = nr;
  d.arch = arch;
  size_t i = 0;
  for (uint64_t a : args) {
    if (i < 6) d.args[i++] = a;
  }
  return d;
}

Result<uint32_t> RunSeccompFilter(const std::vector<sock_filter>& program,
                                  const seccomp_data& call) {
  uint32_t a = 0, x = 0;
  uint32_t mem[BPF_MEMWORDS] = {};
  unsigned char data[sizeof(seccomp_data)];
  memcpy(data, &call, sizeof data);
  for (size_t pc = 0; pc < program.size(); ++pc) {
    const sock_filter& f = program[pc];
    auto bad = [&](std::string_view why) {
      return InvalidArgumentError(fmt::format("instruction {} (code {:#x}): {}", pc, f.code, why));
    };
    uint32_t src = BPF_SRC(f.code) == BPF_X ? x : f.k;
    switch (BPF_CLASS(f.code)) {
      case BPF_LD:
        if (f.code == (BPF_LD | BPF_W | BPF_ABS)) {
          // seccomp allows only aligned 32-bit loads inside seccomp_data.
          if (f.k % 4 != 0 || f.k + 4 > sizeof data) return bad("load outside seccomp_data");
          memcpy(&a, data + f.k, 4);
        } else if (f.code == (BPF_LD | BPF_IMM)) {
          a = f.k;
        } else if (f.code == (BPF_LD | BPF_MEM)) {
          if (f.k >= BPF_MEMWORDS) return bad("scratch index");
          a = mem[f.k];
        } else if (f.code == (BPF_LD | BPF_W | BPF_LEN)) {
          a = sizeof data;
        } else {
          return bad("load mode seccomp refuses");
        }
        break;
      case BPF_LDX:
        if (f.code == (BPF_LDX | BPF_IMM)) {
          x = f.k;
        } else if (f.code == (BPF_LDX | BPF_MEM)) {
          if (f.k >= BPF_MEMWORDS) return bad("scratch index");
          x = mem[f.k];
        } else if (f.code == (BPF_LDX | BPF_W | BPF_LEN)) {
          x = sizeof data;
        } else {
          return bad("load mode seccomp refuses");
        }
        break;
      case BPF_ST:
      case BPF_STX:
        if (f.k >= BPF_MEMWORDS) return bad("scratch index");
        mem[f.k] = BPF_CLASS(f.code) == BPF_ST ? a : x;
        break;
      case BPF_ALU:
        switch (BPF_OP(f.code)) {
          case BPF_ADD:
            a += src;
            break;
          case BPF_SUB:
            a -= src;
            break;
          case BPF_MUL:
            a *= src;
            break;
          case BPF_DIV:
            if (src == 0) return InvalidArgumentError("division by zero");
            a /= src;
            break;
          case BPF_MOD:
            if (src == 0) return InvalidArgumentError("division by zero");
            a %= src;
            break;
          case BPF_AND:
            a &= src;
            break;
          case BPF_OR:
            a |= src;
            break;
          case BPF_XOR:
            a ^= src;
            break;
          case BPF_LSH:
            a = src >= 32 ? 0 : a << src;
            break;
          case BPF_RSH:
            a = src >= 32 ? 0 : a >> src;
            break;
          case BPF_NEG:
            a = 0 - a;
            break;
          default:
            return bad("ALU operation");
        }
        break;
      case BPF_JMP: {
        size_t next;
        if (BPF_OP(f.code) == BPF_JA) {
          next = pc + 1 + f.k;
        } else {
          bool taken;
          switch (BPF_OP(f.code)) {
            case BPF_JEQ:
              taken = a == src;
              break;
            case BPF_JGT:
              taken = a > src;
              break;
            case BPF_JGE:
              taken = a >= src;
              break;
            case BPF_JSET:
              taken = (a & src) != 0;
              break;
            default:
              return bad("jump operation");
          }
          next = pc + 1 + (taken ? f.jt : f.jf);
        }
        if (next >= program.size()) return bad("jump past the end");
        pc = next - 1;  // the loop's ++pc
        break;
      }
      case BPF_RET:
        if (BPF_RVAL(f.code) == BPF_K) return f.k;
        if (BPF_RVAL(f.code) == BPF_A) return a;
        return bad("return source");
      case BPF_MISC:
        if (BPF_MISCOP(f.code) == BPF_TAX) {
          x = a;
        } else if (BPF_MISCOP(f.code) == BPF_TXA) {
          a = x;
        } else {
          return bad("misc operation");
        }
        break;
      default:
        return bad("instruction class");
    }
  }
  return InvalidArgumentError("the program ends without a return");
}

}  // namespace warren::os::testing
