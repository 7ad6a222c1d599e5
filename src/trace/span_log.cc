#include "trace/span_log.h"

#include <fcntl.h>

#include "base/small_file.h"
#include "trace/otlp_json.h"

namespace warren::trace {

Result<std::unique_ptr<SpanLog>> SpanLog::Open(const std::string& path, uint64_t max_bytes) {
  base::UniqueFd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!fd) return ErrnoError("opening the span log " + path, errno);
  return std::unique_ptr<SpanLog>(new SpanLog(std::move(fd), max_bytes));
}

void SpanLog::Submit(SpanData span) {
  std::string line = EncodeOtlpSpan(span);
  line.push_back('\n');
  std::lock_guard lock(mu_);
  (void)base::AppendStartingOverPast(file_.get(), line, max_bytes_);
}

}  // namespace warren::trace
