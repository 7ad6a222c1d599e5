#include "node/audit_collector.h"

#include <sys/stat.h>
#include <unistd.h>

#include <array>

#include "base/time_format.h"
#include "node/sandbox_files.h"
#include "node/sandbox_paths.h"

namespace warren::node {
namespace {

constexpr size_t kMaxPerCall = 1 << 20;
// Entries per call: a sandbox that floods its log costs the sampler a bounded amount per turn.
constexpr size_t kMaxEntriesPerCall = 1000;
constexpr std::array<std::string_view, 5> kActions = {"process.start", "process.end", "file.write",
                                                      "file.move", "file.remove"};
constexpr std::array<std::string_view, 6> kStringFields = {"cmd",    "cwd",  "user",
                                                           "status", "path", "from"};
constexpr std::array<std::string_view, 3> kNumberFields = {"pid", "exitCode", "durationMs"};

// The entry envd meant, rebuilt from what is allowed; nullopt for anything else.
std::optional<nlohmann::json> Rebuild(std::string_view line, std::string_view team) {
  auto in = nlohmann::json::parse(line, nullptr, false);
  if (!in.is_object() || !in["action"].is_string()) return std::nullopt;
  const std::string action = in["action"];
  if (std::find(kActions.begin(), kActions.end(), action) == kActions.end()) return std::nullopt;
  nlohmann::json out{{"source", "envd"}, {"actor", "envd"}, {"team", team}, {"action", action}};
  if (in["time"].is_string() && base::ParseRfc3339(in["time"].get<std::string>())) {
    out["time"] = in["time"];
  }
  for (auto f : kStringFields) {
    if (in.contains(f) && in[f].is_string()) out[f] = in[f];
  }
  for (auto f : kNumberFields) {
    if (in.contains(f) && in[f].is_number_integer()) out[f] = in[f];
  }
  if (in.contains("args") && in["args"].is_array()) {
    nlohmann::json args = nlohmann::json::array();
    for (const auto& a : in["args"]) {
      if (a.is_string() && args.size() < 256) args.push_back(a);
    }
    out["args"] = std::move(args);
  }
  if (in.contains("pty") && in["pty"].is_boolean()) out["pty"] = in["pty"];
  return out;
}

Result<std::string> ReadFrom(int fd, uint64_t offset, size_t max) {
  std::string buf(max, '\0');
  size_t done = 0;
  while (done < max) {
    ssize_t n = pread(fd, buf.data() + done, max - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError("reading envd's audit log", errno);
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  buf.resize(done);
  return buf;
}

}  // namespace

Result<size_t> CollectEnvdAudit(audit::Journal& journal, std::string_view namespace_,
                                std::string_view sandbox_id, const std::string& sandbox_dir) {
  auto fd = OpenRegularFileBeneath(sandbox_dir, std::string("log/") + kEnvdAuditLogName);
  if (!fd.ok()) {
    if (fd.status().code() == StatusCode::kNotFound) return size_t{0};
    return fd.status();
  }
  struct stat st {};
  if (fstat(fd->get(), &st) != 0) return ErrnoError("stat of envd's audit log", errno);
  const auto size = static_cast<uint64_t>(st.st_size);
  uint64_t offset = journal.CollectedOffset(namespace_, sandbox_id);
  if (size < offset) offset = 0;
  if (size == offset) return size_t{0};
  ASSIGN_OR_RETURN(std::string text,
                   ReadFrom(fd->get(), offset, std::min<uint64_t>(size - offset, kMaxPerCall)));
  size_t added = 0, pos = 0;
  while (pos < text.size() && added < kMaxEntriesPerCall) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // the rest is still being written
    if (auto entry = Rebuild(std::string_view(text).substr(pos, nl - pos), namespace_)) {
      RETURN_IF_ERROR(journal.Append(namespace_, sandbox_id, std::move(*entry)));
      ++added;
    }
    pos = nl + 1;
  }
  // A line longer than a whole read can never complete: skip what was read.
  if (pos == 0 && text.size() == kMaxPerCall) pos = text.size();
  journal.SetCollectedOffset(namespace_, sandbox_id, offset + pos);
  return added;
}

}  // namespace warren::node
