#include "os/capabilities.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>

#include "base/small_file.h"
#include "base/strings.h"

namespace warren::os {
namespace {

constexpr std::array<std::string_view, 41> kNames = {
    "CAP_CHOWN",
    "CAP_DAC_OVERRIDE",
    "CAP_DAC_READ_SEARCH",
    "CAP_FOWNER",
    "CAP_FSETID",
    "CAP_KILL",
    "CAP_SETGID",
    "CAP_SETUID",
    "CAP_SETPCAP",
    "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE",
    "CAP_NET_BROADCAST",
    "CAP_NET_ADMIN",
    "CAP_NET_RAW",
    "CAP_IPC_LOCK",
    "CAP_IPC_OWNER",
    "CAP_SYS_MODULE",
    "CAP_SYS_RAWIO",
    "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE",
    "CAP_SYS_PACCT",
    "CAP_SYS_ADMIN",
    "CAP_SYS_BOOT",
    "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE",
    "CAP_SYS_TIME",
    "CAP_SYS_TTY_CONFIG",
    "CAP_MKNOD",
    "CAP_LEASE",
    "CAP_AUDIT_WRITE",
    "CAP_AUDIT_CONTROL",
    "CAP_SETFCAP",
    "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN",
    "CAP_SYSLOG",
    "CAP_WAKE_ALARM",
    "CAP_BLOCK_SUSPEND",
    "CAP_AUDIT_READ",
    "CAP_PERFMON",
    "CAP_BPF",
    "CAP_CHECKPOINT_RESTORE",
};

}  // namespace

CapMask DockerDefaultCapabilities() {
  return CapBit(CAP_CHOWN) | CapBit(CAP_DAC_OVERRIDE) | CapBit(CAP_FSETID) | CapBit(CAP_FOWNER) |
         CapBit(CAP_MKNOD) | CapBit(CAP_NET_RAW) | CapBit(CAP_SETGID) | CapBit(CAP_SETUID) |
         CapBit(CAP_SETFCAP) | CapBit(CAP_SETPCAP) | CapBit(CAP_NET_BIND_SERVICE) |
         CapBit(CAP_SYS_CHROOT) | CapBit(CAP_KILL) | CapBit(CAP_AUDIT_WRITE);
}

CapMask SandboxDefaultCapabilities() { return DockerDefaultCapabilities() & ~CapBit(CAP_MKNOD); }

Result<int> LastCapability() {
  ASSIGN_OR_RETURN(std::string text, base::ReadSmallFile("/proc/sys/kernel/cap_last_cap"));
  auto v = base::ParseInt64(base::TrimSpace(text));
  if (!v || *v < 0 || *v > 63) {
    return InternalError("cap_last_cap: unexpected value '" + text + "'");
  }
  return static_cast<int>(*v);
}

std::optional<std::string_view> CapabilityName(int cap) {
  if (cap < 0 || static_cast<size_t>(cap) >= kNames.size()) return std::nullopt;
  return kNames[static_cast<size_t>(cap)];
}

std::vector<std::string> CapabilityNames(CapMask mask) {
  std::vector<std::string> out;
  for (int cap = 0; cap < 64; ++cap) {
    if (!(mask & CapBit(cap))) continue;
    auto name = CapabilityName(cap);
    out.push_back(name ? std::string(*name) : "CAP_" + std::to_string(cap));
  }
  return out;
}

std::optional<CapMask> ParseCapMask(std::string_view hex) {
  hex = base::TrimSpace(hex);
  if (hex.empty() || hex.size() > 16) return std::nullopt;
  CapMask v = 0;
  for (char c : hex) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return std::nullopt;
    }
    v = v << 4 | static_cast<CapMask>(d);
  }
  return v;
}

int DropBoundingSetRaw(CapMask bounding, int last_cap, int* failed_cap) noexcept {
  for (int cap = 0; cap <= last_cap; ++cap) {
    if (bounding & CapBit(cap)) continue;
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (failed_cap != nullptr) *failed_cap = cap;
      return -errno;
    }
  }
  return 0;
}

int SetCapabilitiesRaw(CapMask caps) noexcept {
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  memset(&header, 0, sizeof header);
  memset(data, 0, sizeof data);
  header.version = _LINUX_CAPABILITY_VERSION_3;
  for (int i = 0; i < 2; ++i) {
    uint32_t word = static_cast<uint32_t>(caps >> (32 * i));
    data[i].effective = word;
    data[i].permitted = word;
    data[i].inheritable = 0;
  }
  if (syscall(SYS_capset, &header, data) != 0) return -errno;
  if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0) return -errno;
  return 0;
}

}  // namespace warren::os
