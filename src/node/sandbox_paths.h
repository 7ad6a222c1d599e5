#pragma once

#include <cstdint>
#include <string>

namespace warren::node {

// Where one sandbox's files live on the host, under the agent's root. The runtime's state
// directory is separate (runtime options); this is what the agent itself keeps per sandbox,
// kept until the Sandbox object is deleted (so logs outlive a failed or finished sandbox).
struct SandboxPaths {
  std::string dir;          // <root>/sandboxes/<sandbox id>
  std::string owner;        // dir/owner.json: uid, namespace and name of the object
  std::string writable;     // dir/rootfs: the runtime's writable layer (upper/, work/)
  std::string log_dir;      // dir/log: bind-mounted read-write at kLogDirInSandbox
  std::string command_log;  // dir/log/command.log: the template command's output (envd)
  std::string envd_log;     // dir/envd.log: pid 1's own stdout and stderr
  std::string volumes;      // dir/volumes/<name>: emptyDir volumes
  // dir/init: the init channel (envd/init_channel.h), bind-mounted read-only at
  // kInitDirInSandbox: /init bodies for envd without a request to it.
  std::string init_dir;

  static SandboxPaths For(const std::string& root, const std::string& sandbox_id);
  // <root>/sandboxes
  static std::string SandboxesDir(const std::string& root);
  // <root>/sandboxes/.volumes: the Volumes' data, on the sandbox storage (volume_agent.h)
  static std::string VolumesDir(const std::string& root);
};

// Never a sandbox id (ids have no dot), so never taken for a gone sandbox's directory.
inline constexpr char kVolumesDirName[] = ".volumes";

// Paths inside every sandbox.
inline constexpr char kEnvdInSandbox[] = "/.warren/envd";
inline constexpr char kLogDirInSandbox[] = "/.warren/log";
inline constexpr char kInitDirInSandbox[] = "/.warren/init";
inline constexpr char kCommandLogName[] = "command.log";
// What envd did for its callers (envd/audit_log.h), collected into the audit journal.
inline constexpr char kEnvdAuditLogName[] = "audit.jsonl";
// Spans of traced requests envd served (trace/span_log.h), forwarded to the exporter.
inline constexpr char kEnvdSpanLogName[] = "spans.jsonl";
inline constexpr uint16_t kEnvdPort = 49983;

}  // namespace warren::node
