#pragma once

#include <cstdint>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/unique_fd.h"

namespace warren::envd {

// What envd did for its callers, one JSON object per line in a file the node agent collects
// into the sandbox's audit journal (node/audit_collector.h): commands started (command line,
// user, working directory) and ended (exit code, duration), files written, moved and removed.
// {"time": RFC 3339, "action": "process.start" | "process.end" | "file.write" | "file.move" |
// "file.remove", ...fields}. Past `max_bytes` the file starts over (the node reads it every few
// seconds and notices). Best effort: a full disk never fails a call. Thread-safe; a default
// (no path) log records nothing.
class AuditLog {
 public:
  AuditLog() = default;
  explicit AuditLog(const std::string& path, uint64_t max_bytes = 4 << 20);

  void Record(std::string_view action, nlohmann::json fields);

 private:
  uint64_t max_bytes_ = 0;
  std::mutex mu_;
  base::UniqueFd file_;  // guarded by mu_
};

}  // namespace warren::envd
