#include "node/envd_span_collector.h"

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
  const std::string offset_path = sandbox_dir + "/" + kOffsetFileName;
  const uint64_t offset = ReadOffset(offset_path);
  size_t forwarded = 0;
  ASSIGN_OR_RETURN(
      uint64_t next,
      ReadAppendedLines(sandbox_dir, std::string("log/") + kEnvdSpanLogName, offset, kMaxPerCall,
                        kMaxSpansPerCall, [&](std::string_view line) -> Result<bool> {
                          auto span = trace::DecodeOtlpSpan(line);
                          if (!span) return false;
                          span->service = "warren-envd";
                          std::erase_if(span->attributes, [](const auto& a) {
                            return a.first == "warren.sandbox_id";
                          });
                          span->attributes.emplace_back("warren.sandbox_id",
                                                        std::string(sandbox_id));
                          trace::SubmitCollected(std::move(*span));
                          ++forwarded;
                          return true;
                        }));
  if (next != offset) {
    RETURN_IF_ERROR(base::WriteFileAtomically(offset_path, std::to_string(next)));
  }
  return forwarded;
}

}  // namespace warren::node
