#include "base/line_index.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace warren::base {
namespace {

constexpr uint64_t kStderrBit = uint64_t{1} << 63;
constexpr size_t kBlockRecords = 512;
// Without an index only the log's tail is read.
constexpr size_t kUnindexedTail = 4 << 20;

void PutLe64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

uint64_t GetLe64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

Result<size_t> PreadFull(int fd, char* buf, size_t len, uint64_t offset) {
  size_t done = 0;
  while (done < len) {
    ssize_t n = pread(fd, buf + done, len - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InternalError(fmt::format("reading log: {}", std::strerror(errno)));
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  return done;
}

Result<uint64_t> SizeOf(int fd) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return InternalError(fmt::format("stat log: {}", std::strerror(errno)));
  return static_cast<uint64_t>(st.st_size);
}

struct Record {
  uint64_t offset = 0;
  bool stderr_line = false;
  int64_t unix_ms = 0;
};

// Reads index records in blocks, so a query costs a few preads, not one per line.
class RecordReader {
 public:
  RecordReader(int fd, size_t count) : fd_(fd), count_(count) {}
  size_t count() const { return count_; }

  Result<Record> At(size_t i) {
    if (i < block_start_ || i >= block_start_ + block_.size() / kLineIndexRecordBytes) {
      block_start_ = i - i % kBlockRecords;
      size_t n = std::min(kBlockRecords, count_ - block_start_);
      block_.resize(n * kLineIndexRecordBytes);
      ASSIGN_OR_RETURN(size_t got, PreadFull(fd_, block_.data(), block_.size(),
                                             block_start_ * kLineIndexRecordBytes));
      block_.resize(got - got % kLineIndexRecordBytes);
      if (i >= block_start_ + block_.size() / kLineIndexRecordBytes) {
        return OutOfRangeError("log index shrank while reading");
      }
    }
    const char* p = block_.data() + (i - block_start_) * kLineIndexRecordBytes;
    uint64_t word = GetLe64(p);
    return Record{word & ~kStderrBit, (word & kStderrBit) != 0,
                  static_cast<int64_t>(GetLe64(p + 8))};
  }

 private:
  int fd_;
  size_t count_;
  size_t block_start_ = 0;
  std::string block_;
};

bool Wanted(const LogLine& line, const LogLineQuery& q) {
  if (q.stderr_only && line.stream != LogStream::kStderr) return false;
  return q.search.empty() || line.text.find(q.search) != std::string::npos;
}

Result<std::vector<LogLine>> ReadUnindexed(int log_fd, uint64_t log_size, const LogLineQuery& q,
                                           int64_t stamp) {
  std::vector<LogLine> out;
  if (q.cursor_ms && (q.backward ? stamp > *q.cursor_ms : stamp < *q.cursor_ms)) return out;
  uint64_t start = log_size > kUnindexedTail ? log_size - kUnindexedTail : 0;
  std::string text(log_size - start, '\0');
  ASSIGN_OR_RETURN(size_t got, PreadFull(log_fd, text.data(), text.size(), start));
  text.resize(got);
  std::vector<LogLine> all;
  size_t pos = 0;
  if (start > 0) pos = std::min(text.size(), text.find('\n') + 1);  // skip a cut first line
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    size_t end = nl == std::string::npos ? text.size() : nl;
    LogLine line{stamp, LogStream::kStdout, text.substr(pos, std::min(end - pos, kMaxLogLine))};
    if (Wanted(line, q)) all.push_back(std::move(line));
    pos = end + 1;
  }
  if (q.backward) {
    for (auto it = all.rbegin(); it != all.rend() && out.size() < q.limit; ++it) {
      out.push_back(std::move(*it));
    }
  } else {
    for (auto& l : all) {
      if (out.size() >= q.limit) break;
      out.push_back(std::move(l));
    }
  }
  return out;
}

// The first record with unix_ms >= t (forward) or > t (backward, the caller steps back one).
Result<size_t> Search(RecordReader& records, int64_t t, bool after) {
  size_t lo = 0, hi = records.count();
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    ASSIGN_OR_RETURN(Record r, records.At(mid));
    if (after ? r.unix_ms <= t : r.unix_ms < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

}  // namespace

std::string LineIndexWriter::Append(std::string_view bytes, LogStream stream, int64_t unix_ms) {
  std::string records;
  const uint64_t flag = stream == LogStream::kStderr ? kStderrBit : 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (at_line_start_) {
      PutLe64(records, (offset_ + i) | flag);
      PutLe64(records, static_cast<uint64_t>(unix_ms));
    }
    at_line_start_ = bytes[i] == '\n';
  }
  offset_ += bytes.size();
  return records;
}

Result<std::vector<LogLine>> ReadLogLines(int log_fd, int index_fd, const LogLineQuery& q,
                                          int64_t fallback_ms) {
  ASSIGN_OR_RETURN(uint64_t log_size, SizeOf(log_fd));
  if (index_fd < 0) return ReadUnindexed(log_fd, log_size, q, fallback_ms);
  ASSIGN_OR_RETURN(uint64_t index_size, SizeOf(index_fd));
  RecordReader records(index_fd, index_size / kLineIndexRecordBytes);
  std::vector<LogLine> out;
  if (records.count() == 0 || q.limit == 0) return out;

  // Reads line i: from its record's offset to the next record's (or the log's end). A record
  // out of order with either neighbour, or past the log, yields nothing; the walk goes on.
  uint64_t bytes_read = 0;
  auto read_line = [&](size_t i) -> Result<std::optional<LogLine>> {
    ASSIGN_OR_RETURN(Record r, records.At(i));
    uint64_t end = log_size;
    if (i + 1 < records.count()) {
      ASSIGN_OR_RETURN(Record next, records.At(i + 1));
      end = next.offset;
    }
    if (i > 0) {
      ASSIGN_OR_RETURN(Record prev, records.At(i - 1));
      if (prev.offset >= r.offset) return std::optional<LogLine>();
    }
    if (r.offset >= end || end > log_size) return std::optional<LogLine>();
    std::string text(std::min<uint64_t>(end - r.offset, kMaxLogLine + 1), '\0');
    ASSIGN_OR_RETURN(size_t got, PreadFull(log_fd, text.data(), text.size(), r.offset));
    bytes_read += got;
    text.resize(got);
    if (!text.empty() && text.back() == '\n') text.pop_back();
    if (text.size() > kMaxLogLine) text.resize(kMaxLogLine);
    return std::optional<LogLine>(LogLine{
        r.unix_ms, r.stderr_line ? LogStream::kStderr : LogStream::kStdout, std::move(text)});
  };

  size_t scanned = 0;
  auto budget_left = [&] { return scanned < q.max_scanned && bytes_read < q.max_bytes_read; };
  if (!q.backward) {
    size_t i = 0;
    if (q.cursor_ms) {
      ASSIGN_OR_RETURN(i, Search(records, *q.cursor_ms, false));
    }
    for (; i < records.count() && out.size() < q.limit && budget_left(); ++i, ++scanned) {
      ASSIGN_OR_RETURN(auto line, read_line(i));
      if (line && Wanted(*line, q)) out.push_back(std::move(*line));
    }
    return out;
  }
  size_t stop = records.count();
  if (q.cursor_ms) {
    ASSIGN_OR_RETURN(stop, Search(records, *q.cursor_ms, true));
  }
  for (size_t i = stop; i > 0 && out.size() < q.limit && budget_left(); --i, ++scanned) {
    ASSIGN_OR_RETURN(auto line, read_line(i - 1));
    if (line && Wanted(*line, q)) out.push_back(std::move(*line));
  }
  return out;
}

}  // namespace warren::base
