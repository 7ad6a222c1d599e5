#pragma once

#include <linux/bpf.h>

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::os {

// Which device nodes a sandbox may use, enforced by the device cgroup: the v1 `devices`
// controller, or on v2 a BPF_PROG_TYPE_CGROUP_DEVICE program attached to the sandbox's group.
// The kernel asks either before any open or mknod of a device node, whatever the mount.

enum DeviceAccess : unsigned { kDeviceMknod = 1, kDeviceRead = 2, kDeviceWrite = 4 };

// One allowed (type, major, minor, access), as v1's devices.allow writes it ("c 1:3 rwm").
struct DeviceRule {
  char type = 'c';      // 'c' (char), 'b' (block) or 'a' (both)
  int64_t major = -1;   // -1: any
  int64_t minor = -1;   // -1: any
  unsigned access = 0;  // DeviceAccess bits
};

// runc's default set: mknod of any node (needed by nothing without CAP_MKNOD, which sandboxes
// lack, but kept so overlayfs whiteouts and runc-made images behave alike), and read, write,
// mknod of null (1:3), zero (1:5), full (1:7), random (1:8), urandom (1:9), tty (5:0), ptmx
// (5:2) and the devpts pseudo-terminals (136:*). Everything else is refused (EPERM).
const std::vector<DeviceRule>& DefaultDeviceRules();

// The rule as v1 writes it: "c 1:3 rwm", "b *:* m".
std::string DeviceRuleText(const DeviceRule& rule);

// The v2 program for `rules` (allow what one rule allows, deny the rest), as eBPF
// instructions. Pure.
std::vector<bpf_insn> CompileDeviceProgram(const std::vector<DeviceRule>& rules);

// Loads CompileDeviceProgram(DefaultDeviceRules()) once per process and returns its fd (owned
// by the process; attachments hold their own reference). FailedPrecondition, naming what the
// kernel said, when it cannot be loaded (no CONFIG_CGROUP_BPF). Thread-safe.
Result<int> DefaultDeviceProgram();

// Attaches `program_fd` to the v2 group open at `cgroup_dir_fd` as its device filter,
// replacing one attached before. The group keeps it until the group is removed.
Status AttachDeviceProgram(int cgroup_dir_fd, int program_fd);

}  // namespace warren::os
