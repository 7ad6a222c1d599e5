#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "base/line_index.h"
#include "base/unique_fd.h"

namespace warren::envd {

// The output of the template's own command: the last `capacity` bytes in memory (served by
// GET /logs) and everything appended to a file when one is given, with a timestamped index of
// its lines beside it (`file_path` + base::kLineIndexSuffix) for E2B's logs routes. Thread-safe.
class LogRing {
 public:
  explicit LogRing(size_t capacity, std::string file_path = "");

  void Append(std::string_view bytes, base::LogStream stream = base::LogStream::kStdout);
  // The retained tail, oldest first, and the total number of bytes ever appended.
  std::string Snapshot() const;
  uint64_t total_bytes() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::string ring_;             // guarded by mu_; at most capacity_ bytes, oldest first
  uint64_t total_ = 0;           // guarded by mu_
  base::UniqueFd file_;          // guarded by mu_
  base::UniqueFd index_;         // guarded by mu_
  base::LineIndexWriter lines_;  // guarded by mu_
};

}  // namespace warren::envd
