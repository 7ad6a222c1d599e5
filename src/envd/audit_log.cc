#include "envd/audit_log.h"

#include <fcntl.h>

#include "base/small_file.h"
#include "base/time_format.h"

namespace warren::envd {

AuditLog::AuditLog(const std::string& path, uint64_t max_bytes) : max_bytes_(max_bytes) {
  if (!path.empty()) {
    file_.reset(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  }
}

void AuditLog::Record(std::string_view action, nlohmann::json fields) {
  if (!file_) return;
  fields["time"] = base::FormatRfc3339Millis(std::chrono::system_clock::now());
  fields["action"] = action;
  const std::string line =
      fields.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard lock(mu_);
  (void)base::AppendStartingOverPast(file_.get(), line, max_bytes_);
}

}  // namespace warren::envd
