#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/result.h"
#include "base/unique_fd.h"

namespace warren::audit {

// Who did what to a sandbox and when, one JSON object per line, on the host: lifecycle calls as
// the API saw them (source "api": the key's name and team, the operation, the HTTP status) in
// `<dir>/<namespace>/<sandbox id>.jsonl`, and what envd did for its callers (source "envd",
// collected by the node agent: commands with their exit codes and durations, files written,
// moved and removed) in `<sandbox id>.envd.jsonl` beside it — two files with a bound each, so
// however much a sandbox makes envd write, the host's entries stay. Read merges them in time
// order. Files are 0600 in 0700 directories. Kept after the sandbox is gone, until nothing was
// added for `retention`; each file keeps its newest `max_bytes` (older entries are cut in
// halves). Survives restarts (appends reach the file system at once; not fsynced).
//
// Every entry has "time" (RFC 3339 ms), "source", "actor", "team" and "action"; the rest are
// fields of that action. Strings are cut at kMaxField bytes. Thread-safe.
inline constexpr size_t kMaxField = 4096;

class Journal {
 public:
  struct Options {
    uint64_t max_bytes = 1 << 20;
    std::chrono::hours retention{24 * 7};
  };
  Journal(std::string dir, Options options);
  // Writes what Post queued, then stops its writer.
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  const std::string& dir() const { return dir_; }

  // Appends `entry` (an object; "time" is set when missing). InvalidArgument for a namespace or
  // id that cannot name a file.
  Status Append(std::string_view namespace_, std::string_view sandbox_id, nlohmann::json entry);
  // Append from a writer thread, for request paths that must not wait for the disk (the E2B
  // calls, claims included): the entry gets its time now; failures are logged. Read waits for
  // what was posted before it, so a caller reads its own entries. At most kMaxQueued wait; past
  // that Post appends itself.
  void Post(std::string namespace_, std::string sandbox_id, nlohmann::json entry);
  // The newest `limit` entries, oldest first. NotFound when the sandbox has no journal.
  Result<std::vector<nlohmann::json>> Read(std::string_view namespace_, std::string_view sandbox_id,
                                           size_t limit) const;
  // The namespace whose journal holds `sandbox_id` (for an admin naming only the id).
  std::optional<std::string> NamespaceOf(std::string_view sandbox_id) const;

  // How far a collector has read a source of entries for this sandbox (0 when never); kept
  // beside the journal so a restart does not collect the same entries twice.
  uint64_t CollectedOffset(std::string_view namespace_, std::string_view sandbox_id) const;
  void SetCollectedOffset(std::string_view namespace_, std::string_view sandbox_id,
                          uint64_t offset);

  // Removes journals nothing was added to for `retention`; returns how many.
  size_t Sweep();

 private:
  Result<std::string> PathOf(std::string_view namespace_, std::string_view sandbox_id,
                             std::string_view suffix) const;

  // An open journal for appending: from the cache, else opened (making its team's directory).
  Result<int> OpenForAppend(const std::string& path);
  void Forget(const std::string& path);

  void WriterLoop();
  // Waits until everything posted so far is appended.
  void Drain() const;

  struct Posted {
    std::string namespace_;
    std::string sandbox_id;
    nlohmann::json entry;
  };
  static constexpr size_t kMaxQueued = 4096;
  mutable std::mutex queue_mu_;
  mutable std::condition_variable queue_cv_;
  std::deque<Posted> queue_;  // guarded by queue_mu_
  uint64_t posted_ = 0;       // guarded by queue_mu_
  uint64_t written_ = 0;      // guarded by queue_mu_
  bool stopping_ = false;     // guarded by queue_mu_
  std::thread writer_;        // started by the first Post

  const std::string dir_;
  const Options options_;
  mutable std::mutex mu_;  // one append (and its trim) at a time
  // The journals appended to most recently stay open (a claim's create and the calls after it
  // hit the same file): an append is then one write and one fstat. Guarded by mu_; front = newest.
  std::list<std::pair<std::string, base::UniqueFd>> open_;
};

}  // namespace warren::audit
