#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "envd/audit_log.h"
#include "envd/connect_handler.h"
#include "envd/dir_watcher.h"
#include "envd/envd_state.h"
#include "envd/filesystem_ops.h"
#include "envd/timer_queue.h"
#include "envd/watcher_registry.h"
#include "net/router.h"

namespace warren::envd {

// The `filesystem.Filesystem` Connect service (e2b-protocol.md §3.5): path resolution for the
// caller's user, then FilesystemOps, DirWatcher streams and the polling watchers. Borrows what it
// uses; owns the open WatchDir sessions until they end. Thread-safe.
class FilesystemService {
 public:
  FilesystemService(const EnvdState& state, const FilesystemOps& ops, TimerQueue& timers,
                    WatcherRegistry& watchers)
      : state_(state), ops_(ops), timers_(timers), watchers_(watchers) {}

  void Register(net::Router& router, RpcAuth auth);
  // Ends every open WatchDir stream with `why` (a reset is stopping their watchers).
  void EndWatchStreams(const Status& why);
  // Records moves and removals there (before Register; null: nowhere).
  void set_audit(AuditLog* audit) { audit_ = audit; }

 private:
  Result<std::string> Resolve(const std::string& path, const os::UserInfo& user) const;
  Result<WatchOptions> WatchOptionsFrom(const std::string& body, const os::UserInfo& user) const;
  void WatchDir(const std::string& payload, const os::UserInfo& user,
                const std::shared_ptr<MessageSink>& sink, StreamOptions options);

  const EnvdState& state_;
  const FilesystemOps& ops_;
  TimerQueue& timers_;
  WatcherRegistry& watchers_;
  AuditLog* audit_ = nullptr;
  std::mutex mu_;
  // The watchers' callbacks hold their sessions only weakly; this keeps them until they end.
  std::vector<std::shared_ptr<StreamSession>> watch_sessions_;  // guarded by mu_
};

}  // namespace warren::envd
