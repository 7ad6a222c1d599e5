#include "server/e2b/responses.h"

#include "api/json.h"
#include "base/time_format.h"

namespace warren::server::e2b {
namespace {

using api::Json;

// E2B's deprecated clientID: a short stable tag per sandbox (its uid's first 8 hex digits).
std::string ClientId(const SandboxRecord& r) {
  std::string out;
  for (char c : r.uid) {
    if (c != '-') out.push_back(c);
    if (out.size() == 8) break;
  }
  while (out.size() < 8) out.push_back('0');
  return out;
}

std::string StateName(E2bState s) { return s == E2bState::kPaused ? "paused" : "running"; }

Json VolumeMountsJson(const SandboxRecord& r) {
  Json out = Json::array();
  for (const auto& [name, path] : r.volume_mounts) out.push_back({{"name", name}, {"path", path}});
  return out;
}

Json Listed(const SandboxRecord& r, const ResponseContext& ctx) {
  Json metadata = Json::object();
  for (const auto& [k, v] : r.metadata) metadata[k] = v;
  return {
      {"sandboxID", r.sandbox_id},
      {"templateID", r.template_id},
      {"alias", r.template_id},
      {"clientID", ClientId(r)},
      {"startedAt", base::FormatRfc3339Millis(r.started_at)},
      {"endAt", base::FormatRfc3339Millis(r.EndAt())},
      {"cpuCount", r.cpu_count > 0 ? r.cpu_count : ctx.default_cpu_count},
      {"memoryMB", r.memory_mb > 0 ? r.memory_mb : ctx.default_memory_mb},
      {"diskSizeMB", r.disk_mb > 0 ? r.disk_mb : ctx.default_disk_mb},
      {"metadata", std::move(metadata)},
      {"state", StateName(r.state)},
      {"envdVersion", ctx.envd_version},
      {"volumeMounts", VolumeMountsJson(r)},
  };
}

Json DomainOrNull(const ResponseContext& ctx) {
  return ctx.domain.empty() ? Json(nullptr) : Json(ctx.domain);
}

Json TokenOrNull(const SandboxRecord& r) {
  return r.access_token.empty() ? Json(nullptr) : Json(r.access_token);
}

}  // namespace

namespace {

Json SandboxJson(const SandboxRecord& r, const ResponseContext& ctx) {
  return {
      {"sandboxID", r.sandbox_id},
      {"templateID", r.template_id},
      {"alias", r.template_id},
      {"clientID", ClientId(r)},
      {"envdVersion", ctx.envd_version},
      {"envdAccessToken", TokenOrNull(r)},
      {"trafficAccessToken", r.traffic_token.empty() ? Json(nullptr) : Json(r.traffic_token)},
      {"domain", DomainOrNull(ctx)},
  };
}

Json SnapshotJson(const SnapshotView& s) {
  return {{"snapshotID", s.snapshot_id}, {"names", s.names}};
}

}  // namespace

std::string EncodeSandbox(const SandboxRecord& r, const ResponseContext& ctx) {
  return api::DumpJson(SandboxJson(r, ctx));
}

std::string EncodeForks(const std::vector<Result<SandboxRecord>>& forks,
                        const ResponseContext& ctx) {
  Json out = Json::array();
  for (const auto& fork : forks) {
    if (fork.ok()) {
      out.push_back({{"sandbox", SandboxJson(*fork, ctx)}});
    } else {
      out.push_back({{"error",
                      {{"code", HttpStatusFromCode(fork.status().code())},
                       {"message", fork.status().message()}}}});
    }
  }
  return api::DumpJson(out);
}

std::string EncodeSnapshot(const SnapshotView& snapshot) {
  return api::DumpJson(SnapshotJson(snapshot));
}

std::string EncodeSnapshots(const std::vector<SnapshotView>& snapshots) {
  Json out = Json::array();
  for (const auto& s : snapshots) out.push_back(SnapshotJson(s));
  return api::DumpJson(out);
}

std::string EncodeListedSandboxes(const std::vector<SandboxRecord>& records,
                                  const ResponseContext& ctx) {
  Json out = Json::array();
  for (const auto& r : records) out.push_back(Listed(r, ctx));
  return api::DumpJson(out);
}

std::string EncodeSandboxDetail(const SandboxRecord& r, const ResponseContext& ctx) {
  Json body = Listed(r, ctx);
  body["envdAccessToken"] = TokenOrNull(r);
  body["allowInternetAccess"] = nullptr;
  body["domain"] = DomainOrNull(ctx);
  body["lifecycle"] = {{"onTimeout", r.auto_pause ? "pause" : "kill"},
                       {"autoResume", r.auto_resume}};
  return api::DumpJson(body);
}

namespace {

Json MetricJson(const UsageSample& s) {
  return {
      {"timestamp", base::FormatRfc3339Millis(s.time)},
      {"timestampUnix",
       std::chrono::duration_cast<std::chrono::seconds>(s.time.time_since_epoch()).count()},
      {"cpuCount", s.cpu_count},
      {"cpuUsedPct", s.cpu_used_pct},
      {"memUsed", s.mem_used},
      {"memTotal", s.mem_total},
      {"memCache", s.mem_cache},
      {"diskUsed", s.disk_used},
      {"diskTotal", s.disk_total},
  };
}

}  // namespace

std::string EncodeMetrics(const std::vector<UsageSample>& samples) {
  Json out = Json::array();
  for (const auto& s : samples) out.push_back(MetricJson(s));
  return api::DumpJson(out);
}

std::string EncodeMetricsBySandbox(const std::map<std::string, UsageSample>& latest) {
  Json sandboxes = Json::object();
  for (const auto& [id, sample] : latest) sandboxes[id] = MetricJson(sample);
  return api::DumpJson(Json{{"sandboxes", std::move(sandboxes)}});
}

std::string EncodeTemplates(const std::vector<TemplateInfo>& templates,
                            const ResponseContext& ctx) {
  Json out = Json::array();
  for (const auto& t : templates) {
    std::string created = base::FormatRfc3339Millis(t.created_at);
    out.push_back({
        {"templateID", t.name},
        {"buildID", t.name},
        {"cpuCount", t.cpu_count > 0 ? t.cpu_count : ctx.default_cpu_count},
        {"memoryMB", t.memory_mb > 0 ? t.memory_mb : ctx.default_memory_mb},
        {"diskSizeMB", t.disk_mb > 0 ? t.disk_mb : ctx.default_disk_mb},
        {"public", false},
        {"aliases", Json::array({t.name})},
        {"names", Json::array({t.name})},
        {"createdAt", created},
        {"updatedAt", created},
        {"createdBy", nullptr},
        {"lastSpawnedAt", nullptr},
        {"spawnCount", 0},
        {"buildCount", 1},
        {"envdVersion", ctx.envd_version},
        {"buildStatus", "ready"},
        {"kind", t.kind},
    });
  }
  return api::DumpJson(out);
}

}  // namespace warren::server::e2b
