#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "envd/dir_watcher.h"

namespace warren::envd {

// Every directory watch envd runs: the ones behind open WatchDir streams (removed when their
// stream ends) and the polling watchers of CreateWatcher / GetWatcherEvents / RemoveWatcher
// (the Python sync SDK), whose events are buffered until fetched. Thread-safe.
class WatcherRegistry {
 public:
  explicit WatcherRegistry(const FilesystemOps& ops) : ops_(ops) {}

  // Keeps a stream's watcher until RemoveStream(id). Returns the id.
  std::string AddStream(std::unique_ptr<DirWatcher> watcher);
  void RemoveStream(const std::string& id);

  // Polling watchers. Ids look like E2B's: "w" + random.
  Result<std::string> CreatePolling(WatchOptions options);
  // The events buffered since the last call (and clears them); a watcher that failed returns
  // its error. NotFound for an unknown id.
  Result<std::vector<FilesystemEvent>> TakeEvents(const std::string& id);
  Status RemovePolling(const std::string& id);

  // Stops every watcher (sandbox recycling).
  void Clear();
  size_t size() const;

 private:
  struct Polling {
    std::mutex mu;
    std::vector<FilesystemEvent> events;  // guarded by mu
    std::optional<Status> error;          // guarded by mu
    std::unique_ptr<DirWatcher> watcher;  // set once after start
  };

  const FilesystemOps& ops_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<DirWatcher>> streams_;  // guarded by mu_
  std::map<std::string, std::shared_ptr<Polling>> polling_;     // guarded by mu_
};

}  // namespace warren::envd
