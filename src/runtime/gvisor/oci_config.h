#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/spec.h"

namespace warren::runtime::gvisor {

// Where pid 1 of every gVisor sandbox comes from: warren-gvisor-init, bind-mounted read-only.
inline constexpr char kInitInSandbox[] = "/.warren/gvisor-init";

// What the OCI bundle needs beyond the spec: host facts the runtime resolved.
struct OciHost {
  std::string rootfs;        // the overlay mount of the sandbox's layers (absolute)
  std::string init_path;     // warren-gvisor-init on the host
  std::string cgroups_path;  // "/<parent>/<id>"
  uint32_t nofile_hard = 1 << 20;
  // The spec's bind mounts with their sources resolved (sub_path joined), in spec order.
  std::vector<std::string> bind_sources;
};

// The config.json of a sandbox's OCI bundle (pure; runtime/gvisor/README.md): pid 1 is
// warren-gvisor-init running the spec's command; loopback only (runsc --network=none); the
// spec's cpu and memory as cgroup limits (the pids limit is not: the host sees the Sentry's
// threads, not the sandbox's processes); Docker's capabilities without CAP_MKNOD and
// CAP_NET_RAW for root, none for other users; the spec's rlimits, NOFILE 1024 / nofile_hard
// by default.
std::string BuildOciConfig(const SandboxSpec& spec, const OciHost& host);

// The runsc container id of a sandbox: fixed length, so no id is a prefix of another (runsc
// resolves ids by prefix: runtime-spikes §3.6).
std::string RunscId(std::string_view sandbox_id);

}  // namespace warren::runtime::gvisor
