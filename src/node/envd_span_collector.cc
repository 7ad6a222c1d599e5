#include "node/envd_span_collector.h"

#include <sys/stat.h>
#include <unistd.h>

#include "base/small_file.h"
#include "base/strings.h"
#include "node/sandbox_files.h"
#include "node/sandbox_paths.h"
#include "trace/otlp_json.h"
#include "trace/tracer.h"

namespace warren::node {
namespace {

constexpr size_t kMaxPerCall = 1 << 20;
// Spans per call: a sandbox that floods its log costs the sampler, and the exporter's bounded
// queue, a bounded amount per turn.
constexpr size_t kMaxSpansPerCall = 512;
constexpr char kOffsetFileName[] = "spans.collected";

uint64_t ReadOffset(const std::string& path) {
  auto text = base::ReadSmallFile(path, 64);
  if (!text.ok()) return 0;
  return base::ParseUint64(base::TrimSpace(*text)).value_or(0);
}

}  // namespace

Result<size_t> CollectEnvdSpans(std::string_view sandbox_id, const std::string& sandbox_dir) {
  if (!trace::Enabled()) return size_t{0};
  auto fd = OpenRegularFileBeneath(sandbox_dir, std::string("log/") + kEnvdSpanLogName);
  if (!fd.ok()) {
    if (fd.status().code() == StatusCode::kNotFound) return size_t{0};
    return fd.status();
  }
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return ErrnoError("stat of envd's span log", errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  const std::string offset_path = sandbox_dir + "/" + kOffsetFileName;
  uint64_t offset = ReadOffset(offset_path);
  if (size < offset) offset = 0;
  if (size == offset) return size_t{0};
  std::string text(std::min<uint64_t>(size - offset, kMaxPerCall), '\0');
  ssize_t n = pread(fd->get(), text.data(), text.size(), static_cast<off_t>(offset));
  if (n < 0) return ErrnoError("reading envd's span log", errno);
  text.resize(static_cast<size_t>(n));
  size_t forwarded = 0, pos = 0;
  while (pos < text.size() && forwarded < kMaxSpansPerCall) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // the rest is still being written
    if (auto span = trace::DecodeOtlpSpan(std::string_view(text).substr(pos, nl - pos))) {
      span->service = "warren-envd";
      std::erase_if(span->attributes, [](const auto& a) { return a.first == "warren.sandbox_id"; });
      span->attributes.emplace_back("warren.sandbox_id", std::string(sandbox_id));
      trace::SubmitCollected(std::move(*span));
      ++forwarded;
    }
    pos = nl + 1;
  }
  // A line longer than a whole read can never complete: skip what was read.
  if (pos == 0 && text.size() == kMaxPerCall) pos = text.size();
  RETURN_IF_ERROR(base::WriteFileAtomically(offset_path, std::to_string(offset + pos)));
  return forwarded;
}

}  // namespace warren::node
