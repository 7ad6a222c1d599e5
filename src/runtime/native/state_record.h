#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/runtime.h"
#include "runtime/spec.h"

namespace warren::runtime::native {

// What the runtime remembers about a sandbox on disk (<state_dir>/<id>/state.json), so a
// restarted server can adopt it: the spec (to start it again), its pid 1 identified by pid +
// start time + boot id (a recycled pid is never mistaken for the sandbox), and its lifecycle.
// Written atomically (write + rename) on every state change. Value type.
struct SandboxRecord {
  SandboxSpec spec;
  SandboxState state = SandboxState::kCreated;
  int pid = 0;
  uint64_t start_time = 0;  // clock ticks since boot (/proc/<pid>/stat field 22)
  std::string boot_id;
  std::string cgroup_version;  // "v1" or "v2": the hierarchy the cgroup was made in
  bool created_writable_dir = false;
  base::WallTime created_at{};
  base::WallTime started_at{};
  std::optional<ExitStatus> last_exit;
  uint64_t oom_kills_at_start = 0;
  // The egress link while pid 1 runs with one (sbnet::Attachment): its address and host link.
  std::string egress_address;
  std::string egress_link;
};

std::string EncodeRecord(const SandboxRecord& record);
// DataLoss when the text is not a record this version understands, naming what is wrong.
Result<SandboxRecord> DecodeRecord(std::string_view text);

}  // namespace warren::runtime::native
