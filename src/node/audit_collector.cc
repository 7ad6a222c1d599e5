#include "node/audit_collector.h"

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

}  // namespace

Result<size_t> CollectEnvdAudit(audit::Journal& journal, std::string_view namespace_,
                                std::string_view sandbox_id, const std::string& sandbox_dir) {
  const uint64_t offset = journal.CollectedOffset(namespace_, sandbox_id);
  size_t added = 0;
  ASSIGN_OR_RETURN(uint64_t next,
                   ReadAppendedLines(
                       sandbox_dir, std::string("log/") + kEnvdAuditLogName, offset, kMaxPerCall,
                       kMaxEntriesPerCall, [&](std::string_view line) -> Result<bool> {
                         auto entry = Rebuild(line, namespace_);
                         if (!entry) return false;
                         RETURN_IF_ERROR(journal.Append(namespace_, sandbox_id, std::move(*entry)));
                         ++added;
                         return true;
                       }));
  if (next != offset) journal.SetCollectedOffset(namespace_, sandbox_id, next);
  return added;
}

}  // namespace warren::node
