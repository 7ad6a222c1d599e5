#include "envd/log_ring.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>

namespace warren::envd {

LogRing::LogRing(size_t capacity, std::string file_path) : capacity_(capacity) {
  if (!file_path.empty()) {
    file_.reset(open(file_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    const std::string index_path = file_path + base::kLineIndexSuffix;
    index_.reset(open(index_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    // A restarted envd appends to the log it left; the index goes on from the log's end.
    // A record torn by a crash would shift every later one: cut the index to whole records.
    struct stat ist {};
    if (index_ && fstat(index_.get(), &ist) == 0 &&
        ist.st_size % base::kLineIndexRecordBytes != 0) {
      if (ftruncate(index_.get(), ist.st_size - ist.st_size % base::kLineIndexRecordBytes) != 0) {
        index_.reset();
      }
    }
    struct stat st {};
    if (file_ && fstat(file_.get(), &st) == 0) {
      lines_.ResumeAt(static_cast<uint64_t>(st.st_size));
    }
  }
}

void LogRing::Append(std::string_view bytes, base::LogStream stream) {
  std::lock_guard lock(mu_);
  total_ += bytes.size();
  if (file_) {
    // Best effort: a full disk must not stop the command. The index is only written for bytes
    // the log took, so its offsets never point past the log.
    ssize_t n = write(file_.get(), bytes.data(), bytes.size());
    if (n > 0 && index_) {
      const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      std::string records = lines_.Append(bytes.substr(0, static_cast<size_t>(n)), stream, now);
      if (!records.empty()) {
        ssize_t ignored = write(index_.get(), records.data(), records.size());
        (void)ignored;
      }
    }
  }
  if (bytes.size() >= capacity_) {
    ring_.assign(bytes.substr(bytes.size() - capacity_));
    return;
  }
  ring_.append(bytes);
  if (ring_.size() > capacity_) ring_.erase(0, ring_.size() - capacity_);
}

std::string LogRing::Snapshot() const {
  std::lock_guard lock(mu_);
  return ring_;
}

uint64_t LogRing::total_bytes() const {
  std::lock_guard lock(mu_);
  return total_;
}

}  // namespace warren::envd
