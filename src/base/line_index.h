#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::base {

// A timestamped index of the lines of an append-only log: one fixed 16-byte record per line
// start (little-endian offset into the log, top bit = the line came from stderr; then the unix
// time in milliseconds when its first byte arrived). envd writes it beside the template
// command's log; the node reads both to answer E2B's logs routes. The log itself stays the raw
// bytes `warren logs` streams.
//
// The reader treats both files as hostile (the sandbox can write them): a record out of order
// with its neighbours or pointing past the log yields no line (the walk goes on), lines are cut
// at kMaxLogLine bytes, and a query reads a bounded number of records and log bytes.
inline constexpr char kLineIndexSuffix[] = ".idx";
inline constexpr size_t kLineIndexRecordBytes = 16;
inline constexpr size_t kMaxLogLine = 16 * 1024;

enum class LogStream : uint8_t { kStdout = 0, kStderr = 1 };

// Tracks where lines start in a log as bytes are appended. Not thread-safe (its owner locks).
class LineIndexWriter {
 public:
  // The records for `bytes`, appended at log offset `offset()`; advances the offset.
  std::string Append(std::string_view bytes, LogStream stream, int64_t unix_ms);
  uint64_t offset() const { return offset_; }
  // Goes on after a log of `size` bytes someone else wrote; the next byte starts a line.
  void ResumeAt(uint64_t size) {
    offset_ = size;
    at_line_start_ = true;
  }

 private:
  uint64_t offset_ = 0;
  bool at_line_start_ = true;
};

struct LogLine {
  int64_t unix_ms = 0;
  LogStream stream = LogStream::kStdout;
  std::string text;  // without its newline; at most kMaxLogLine bytes
};

struct LogLineQuery {
  // Forward: lines at or after `cursor_ms`, oldest first. Backward: lines at or before it,
  // newest first (no cursor = from the end).
  std::optional<int64_t> cursor_ms;
  bool backward = false;
  size_t limit = 1000;
  std::string search;                     // case-sensitive substring; empty = every line
  bool stderr_only = false;               // E2B's level=warn|error
  size_t max_scanned = 1 << 20;           // records
  uint64_t max_bytes_read = 64ull << 20;  // log bytes
};

// Reads the lines `query` selects from a log (`log_fd`) and its index (`index_fd`, -1 when
// there is none: then the whole log is one batch of lines stamped `fallback_ms`).
Result<std::vector<LogLine>> ReadLogLines(int log_fd, int index_fd, const LogLineQuery& query,
                                          int64_t fallback_ms);

}  // namespace warren::base
