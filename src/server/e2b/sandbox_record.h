#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/object.h"
#include "base/clock.h"
#include "base/result.h"

namespace warren::server::e2b {

// Where a sandbox stands, as E2B sees it.
enum class E2bState {
  kRunning,   // serving (or starting/resuming without a pause requested)
  kPaused,    // paused, or a pause was requested
  kDead,      // failed or finished: only DELETE still sees it
  kDeleting,  // deletion under way: invisible
};

// The E2B view of one Sandbox object (what list, info and the lifecycle calls need). Value type.
struct SandboxRecord {
  std::string sandbox_id;
  std::string namespace_;
  std::string name;
  std::string uid;
  int64_t resource_version = 0;
  std::string template_id;  // as the create named it (or the pool it came from)
  std::string owner;        // API key id
  base::WallTime started_at{};
  std::optional<base::WallTime> shutdown_time;
  std::optional<base::WallTime> pause_time;
  E2bState state = E2bState::kRunning;
  std::string phase;  // status.phase as the node reports it
  bool ready = false;
  std::string message;  // why it failed, when it did
  std::map<std::string, std::string> metadata;
  // envd's token: set only for the create and connect answers (the one place E2B's contract
  // returns it); RecordFromObject never reads it (it is sealed on the object).
  std::string access_token;
  // The traffic token (allowPublicTraffic: false), for the same answers; empty = public.
  std::string traffic_token;
  bool auto_pause = false;
  bool auto_resume = false;
  bool pool_member = false;  // an unclaimed warm-pool member: never shown through E2B
  int32_t cpu_count = 0;     // 0 = no limit set
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
  // E2B's volumeMounts of its create: (volume name, mount path).
  std::vector<std::pair<std::string, std::string>> volume_mounts;

  // The end of its life as E2B reports it (endAt): the pending pause or shutdown, or the start
  // when no timer is set.
  base::WallTime EndAt() const;
  bool Visible() const {
    return !pool_member && (state == E2bState::kRunning || state == E2bState::kPaused);
  }
};

// InvalidArgument when the object carries no sandbox id.
Result<SandboxRecord> RecordFromObject(const api::Object& sandbox);

}  // namespace warren::server::e2b
