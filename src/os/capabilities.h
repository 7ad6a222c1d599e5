#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::os {

// A set of capabilities as a bit mask (bit n = capability n), the form /proc/<pid>/status
// prints in CapEff/CapBnd.
using CapMask = uint64_t;

inline constexpr CapMask CapBit(int cap) { return CapMask{1} << cap; }

// Docker's default set: CHOWN, DAC_OVERRIDE, FSETID, FOWNER, MKNOD, NET_RAW, SETGID, SETUID,
// SETFCAP, SETPCAP, NET_BIND_SERVICE, SYS_CHROOT, KILL, AUDIT_WRITE (0x00000000a80425fb).
CapMask DockerDefaultCapabilities();
// What a sandbox's root gets: Docker's set without CAP_MKNOD (as Podman's default), so no
// device node can be made inside; device nodes that arrive anyway (image layers, volumes)
// sit on nodev mounts and behind the device cgroup.
CapMask SandboxDefaultCapabilities();

// The highest capability number the running kernel knows (/proc/sys/kernel/cap_last_cap).
Result<int> LastCapability();

// "CAP_CHOWN" for 0; nullopt for numbers this build does not name.
std::optional<std::string_view> CapabilityName(int cap);
// Names of every capability in the mask, in bit order ("CAP_CHOWN", ...): the OCI form.
std::vector<std::string> CapabilityNames(CapMask mask);
// Parses the hex mask of a CapEff:/CapBnd: line.
std::optional<CapMask> ParseCapMask(std::string_view hex);

// Child side (async-signal-safe). Drops every capability outside `bounding` from the bounding
// set (needs CAP_SETPCAP, so call before giving it up). Returns 0 or -errno; on failure
// *failed_cap says which.
int DropBoundingSetRaw(CapMask bounding, int last_cap, int* failed_cap) noexcept;
// Sets permitted = effective = `caps`, inheritable = 0, and clears the ambient set, as runc
// does since CVE-2022-24769. Returns 0 or -errno.
int SetCapabilitiesRaw(CapMask caps) noexcept;

}  // namespace warren::os
