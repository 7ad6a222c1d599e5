#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "os/rlimit.h"
#include "sbnet/egress_policy.h"

namespace warren::runtime {

// What a sandbox is made of. The node agent builds one from a Sandbox object (its template's
// container, the image layers an image store resolved, the resources) and hands it to
// Runtime::Create. Plain value type.

// A host path made visible inside the sandbox. warren-envd reaches every sandbox this way
// (read-only, then run as pid 1); emptyDir/hostPath volumes are read-write ones.
// The source is resolved on the host at every Start without following a symlink (Create
// makes `source` canonical first), and every bind mount is nodev.
struct BindMount {
  std::string source;  // absolute host path, file or directory; must exist
  std::string target;  // absolute path inside the sandbox; created (in the writable layer)
                       // when missing; resolved inside the sandbox root, so image symlinks
                       // cannot redirect it to the host
  bool read_only = true;
  // Kubernetes' subPath: relative, no "..". Resolved beneath `source` (RESOLVE_BENEATH, no
  // symlinks: a volume's contents are the sandbox's to plant them in); missing directories
  // are made with the source's mode and owner.
  std::string sub_path;
};

// The identity pid 1 runs as. Numeric: resolving names needs the image's /etc/passwd, which
// is the caller's business (envd's user_db reads it without NSS).
struct User {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::vector<uint32_t> supplementary_gids;
};

// Limits enforced by the sandbox's cgroup. 0 means unlimited for each.
struct Resources {
  int64_t cpu_millicores = 0;  // CFS quota: 1000 = one full CPU per 100 ms period; >= 10
  int64_t memory_bytes = 0;    // hard limit, swap included; >= 4 MiB
  int64_t pids = 0;            // processes + threads; >= 2 (pid 1 and one child)
};

struct SandboxSpec {
  // Identifies the sandbox and is its hostname: a DNS label (1-63 of [a-z0-9-], starting and
  // ending with a letter or digit). E2B ids ("i" + 20 [a-z0-9]) qualify.
  std::string id;
  // Image layer directories, read-only, BOTTOM FIRST (the order of an OCI manifest): the last
  // one wins where layers overlap. At least one.
  std::vector<std::string> layers;
  // Where the writable layer lives: the runtime keeps upper/ and work/ inside. Created when
  // missing (its parent must exist); an existing one is reused as is (a saved writable layer
  // comes back). Destroy removes it.
  std::string writable_dir;
  // pid 1: argv (argv[0] absolute, or looked up in the PATH of `env`, default
  // /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin), "KEY=VALUE" environment,
  // absolute working directory (must exist in the image).
  std::vector<std::string> command;
  std::vector<std::string> env;
  std::string working_dir = "/";
  User user;
  std::vector<BindMount> mounts;
  Resources resources;
  // The sandbox's share of contended CPU against the node's other sandboxes at its start, on
  // cgroup v2's scale (os::CgroupLimits::cpu_weight); 0 = the kernel's default. Not kept in
  // the runtime's record: Runtime::SetCpuWeight changes it while the sandbox runs.
  int cpu_weight = 0;
  // Run in a user namespace: root inside is an unprivileged uid outside
  // (NativeRuntimeOptions::userns_host_uid, 65536 ids), image layers are idmapped so root
  // inside can still write through the overlay.
  bool user_namespace = false;
  // Extra resource limits; RLIMIT_NOFILE defaults to 1024 soft / the runtime's hard limit.
  std::vector<os::Rlimit> rlimits;
  // pid 1's stdout and stderr are appended here (created 0640); empty means /dev/null.
  std::string log_path;
  // The runtime class that runs it (RuntimeRouter); empty = the node's default. A runtime
  // itself ignores it.
  std::string runtime_class;
  // A link out (sbnet::SandboxNetwork): an address of the node's range, a default route and
  // the node's resolvers, under `egress_policy`. Without it the sandbox has loopback only.
  // A runtime refuses it when its node has no sandbox network.
  bool egress = false;
  sbnet::EgressPolicy egress_policy;
  // A memory image Runtime::CaptureMemory wrote (absolute directory): the first Start restores
  // its processes, where they were, instead of running `command`; a later Start (after a stop)
  // runs `command`. The layers must be those the image was captured on, with its writable
  // layer's files on top (the image holds open files by path). Runtimes without
  // StateSupport::memory refuse it.
  std::string restore_image;
};

// Checks the spec without touching the system: InvalidArgument naming the first bad field.
Status ValidateSpec(const SandboxSpec& spec);
// Whether `id` is an acceptable sandbox id (see SandboxSpec::id).
bool IsValidSandboxName(std::string_view id);

}  // namespace warren::runtime
