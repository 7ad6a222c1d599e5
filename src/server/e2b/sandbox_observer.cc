#include "server/e2b/sandbox_observer.h"

namespace warren::server::e2b {

Result<std::vector<base::LogLine>> SandboxObserver::Logs(const auth::Principal& who,
                                                         std::string_view sandbox_id,
                                                         const base::LogLineQuery& query) {
  ASSIGN_OR_RETURN(api::Object o, service_.Lookup(who, sandbox_id));
  ASSIGN_OR_RETURN(SandboxRecord r, RecordFromObject(o));
  if (node_ == nullptr) return std::vector<base::LogLine>{};
  auto lines = node_->Logs(r.sandbox_id, query);
  // No log yet (envd has not started): an empty page, as E2B answers for a young sandbox.
  if (!lines.ok() && lines.status().code() == StatusCode::kNotFound) {
    return std::vector<base::LogLine>{};
  }
  return lines;
}

Result<std::map<std::string, UsageSample>> SandboxObserver::LatestMetrics(
    const auth::Principal& who, const std::vector<std::string>& ids) {
  std::map<std::string, UsageSample> out;
  if (node_ == nullptr) return out;
  for (const auto& id : ids) {
    auto o = service_.Lookup(who, id);
    if (!o.ok()) {
      if (o.status().code() == StatusCode::kNotFound) continue;
      return o.status();
    }
    auto r = RecordFromObject(*o);
    if (!r.ok()) continue;
    auto samples = node_->Usage(r->sandbox_id);
    if (!samples.empty()) out.emplace(id, samples.back());
  }
  return out;
}

}  // namespace warren::server::e2b
