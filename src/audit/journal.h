#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::audit {

// Who did what to a sandbox and when, one JSON object per line, in
// `<dir>/<namespace>/<sandbox id>.jsonl` on the host: lifecycle calls as the API saw them
// (source "api": the key's name and team, the operation, the HTTP status) and what envd did for
// its callers (source "envd", collected by the node agent: commands with their exit codes and
// durations, files written, moved and removed). Kept after the sandbox is gone, until nothing
// was added for `retention`; each journal keeps its newest `max_bytes` (older entries are cut
// in halves). Survives restarts (appends reach the file system at once; not fsynced).
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

  const std::string& dir() const { return dir_; }

  // Appends `entry` (an object; "time" is set when missing). InvalidArgument for a namespace or
  // id that cannot name a file.
  Status Append(std::string_view namespace_, std::string_view sandbox_id, nlohmann::json entry);
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

  const std::string dir_;
  const Options options_;
  mutable std::mutex mu_;  // one append (and its trim) at a time
};

}  // namespace warren::audit
