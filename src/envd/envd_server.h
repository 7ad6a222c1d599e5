#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "envd/audit_log.h"
#include "envd/envd_state.h"
#include "envd/filesystem_ops.h"
#include "envd/filesystem_service.h"
#include "envd/init_channel.h"
#include "envd/log_ring.h"
#include "envd/process_manager.h"
#include "envd/process_service.h"
#include "envd/timer_queue.h"
#include "envd/watcher_registry.h"
#include "net/router.h"
#include "os/user_db.h"

namespace warren::envd {

struct EnvdOptions {
  EnvdDefaults defaults;
  std::string passwd_path = "/etc/passwd";
  std::string group_path = "/etc/group";
  // The template command's output kept for GET /logs.
  size_t log_capacity = 1024 * 1024;
  std::string log_file;
  // Where envd records what it did for its callers (audit_log.h); empty = nowhere.
  std::string audit_file;
};

// The header the node agent authenticates POST /reset (and a token-replacing POST /init) with.
inline constexpr std::string_view kNodeSecretHeader = "X-Warren-Node-Secret";

// warren-envd's HTTP surface (e2b-protocol.md §3): the process.Process and filesystem.Filesystem
// Connect services (JSON; unary and server-streaming), /health, /files, /envs, /metrics, /init,
// and Warren's own /logs and /reset (README.md). Owns the agent's state: processes, watchers,
// settings, the template command's log. Thread-safe; must outlive the server serving its router.
class Envd {
 public:
  explicit Envd(EnvdOptions options);
  ~Envd();
  Envd(const Envd&) = delete;
  Envd& operator=(const Envd&) = delete;

  net::Router BuildRouter();

  // Kills every process, stops every watcher and forgets tokens, env vars and defaults given
  // by /init (sandbox recycling).
  void Reset();

  // Takes /init bodies from the node's init channel (init_channel.h) from now on: the current
  // one at once, each later one before the first request that reads the settings after it.
  void FollowInitChannel(std::unique_ptr<InitChannelReader> channel);

  LogRing& command_log() { return command_log_; }
  ProcessManager& processes() { return processes_; }
  EnvdState& state() { return state_; }

 private:
  class Impl;
  EnvdState state_;
  AuditLog audit_;
  os::UserDb users_;
  FilesystemOps fs_;
  TimerQueue timers_;
  ProcessManager processes_;
  WatcherRegistry watchers_;
  LogRing command_log_;
  ProcessService process_service_;
  FilesystemService filesystem_service_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace warren::envd
