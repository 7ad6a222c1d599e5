#include "envd/log_ring.h"

#include <fcntl.h>
#include <unistd.h>

namespace warren::envd {

LogRing::LogRing(size_t capacity, std::string file_path) : capacity_(capacity) {
  if (!file_path.empty()) {
    file_.reset(open(file_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
  }
}

void LogRing::Append(std::string_view bytes) {
  std::lock_guard lock(mu_);
  total_ += bytes.size();
  if (file_) {
    // Best effort: a full disk must not stop the command.
    ssize_t ignored = write(file_.get(), bytes.data(), bytes.size());
    (void)ignored;
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
