#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/types/pod_template.h"
#include "base/result.h"
#include "base/unique_fd.h"
#include "node/failure.h"
#include "node/sandbox_plan.h"

namespace warren::node {

// What <sandbox dir>/owner.json records: which object a sandbox on this node belongs to (so a
// restarted agent adopts it only for that object, never for a newer one that reuses its id),
// and how it restarts.
struct OwnerRecord {
  std::string uid;
  std::string namespace_;
  std::string name;
  RestartPolicy restart_policy = RestartPolicy::kAlways;
  bool has_command = false;
  int64_t cpu_millicores = 0;        // the cpu limit (0 = none), for stats
  int64_t disk_bytes = 0;            // its file system's size (ephemeral-storage; 0 = unbounded)
  std::vector<std::string> volumes;  // "namespace/name" of the Volumes it mounts
  std::vector<std::string> volume_dirs;  // and their directories
  // The pod template it runs (compact JSON; "" for a sandbox made before it was recorded), so
  // an in-place update after an agent restart knows what changed (inplace_update.cc).
  std::string template_json;
};
Status WriteOwner(const std::string& path, const OwnerRecord& owner);
// OwnerRecord::template_json and back.
std::string TemplateJson(const api::PodTemplateSpec& pod);
Result<api::PodTemplateSpec> ParseTemplateJson(const std::string& json);
Result<OwnerRecord> ReadOwner(const std::string& path);

// Makes the directories a plan needs (mode 0711 for the sandbox's own; emptyDir volumes and
// the log directory owned by `sandbox_root_uid`, the host uid of root inside the sandbox) and
// checks hostPath volumes (their Kubernetes types). The failure names the volume.
std::optional<Failure> PrepareHostPaths(const std::vector<HostPath>& paths,
                                        uint32_t sandbox_root_uid);

// Makes `dir` and its missing parents with mode 0711 (searchable by user-namespaced sandboxes).
Status MakeDirs(const std::string& dir);

// Opens `dir`/`relative` read-only without following any symlink and accepting only a regular
// file: the sandbox writes below `dir` and must not make the host read anything else.
Result<base::UniqueFd> OpenRegularFileBeneath(const std::string& dir, const std::string& relative);

// Reads what a sandbox appended to `dir`/`relative` (a log envd writes, collected by the node:
// hostile input) since `offset`: opened as OpenRegularFileBeneath does, at most `max_bytes` read,
// complete lines only (a last line still being written waits for the next call), each handed to
// `line` until `max_lines` of them returned true (the ones that counted). A file shorter than
// `offset` was started over by its writer and is read from its start; a line longer than a
// whole read can never complete and is skipped. Returns the offset to resume from (`offset`
// when there is no file or nothing new); the first error of `line` stops it.
Result<uint64_t> ReadAppendedLines(const std::string& dir, const std::string& relative,
                                   uint64_t offset, size_t max_bytes, size_t max_lines,
                                   const std::function<Result<bool>(std::string_view)>& line);

// The last `max_bytes` of a host file (pid 1's log), for messages; "" when unreadable.
std::string TailOfFile(const std::string& path, size_t max_bytes);

}  // namespace warren::node
