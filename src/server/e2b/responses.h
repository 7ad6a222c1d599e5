#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/object.h"
#include "base/result.h"
#include "server/e2b/node_access.h"
#include "server/e2b/sandbox_record.h"

namespace warren::server::e2b {

// JSON bodies of the E2B control-plane API (e2b-protocol.md §2), with every field the SDKs
// require present (Python raises on a missing one, deprecated or not).

struct ResponseContext {
  std::string envd_version;  // what warren-envd implements
  int32_t default_cpu_count = 1;
  int64_t default_memory_mb = 512;
  int64_t default_disk_mb = 0;
  // Domain mode: the SDK builds sandbox hosts as <port>-<id>.<domain> from this; empty = null
  // (clients then use E2B_SANDBOX_URL).
  std::string domain;
};

// `Sandbox`: create, connect, resume.
std::string EncodeSandbox(const SandboxRecord& r, const ResponseContext& ctx);
// `[]ListedSandbox`.
std::string EncodeListedSandboxes(const std::vector<SandboxRecord>& records,
                                  const ResponseContext& ctx);
// `SandboxDetail`: info.
std::string EncodeSandboxDetail(const SandboxRecord& r, const ResponseContext& ctx);
// The 201 body of POST /sandboxes/{id}/fork: one entry per fork, {"sandbox": Sandbox} or
// {"error": {"code", "message"}}.
std::string EncodeForks(const std::vector<Result<SandboxRecord>>& forks,
                        const ResponseContext& ctx);
// `{snapshotID, names}` and its list.
struct SnapshotView {
  std::string snapshot_id;
  std::vector<std::string> names;
};
std::string EncodeSnapshot(const SnapshotView& snapshot);
std::string EncodeSnapshots(const std::vector<SnapshotView>& snapshots);
// `[]SandboxMetric`.
std::string EncodeMetrics(const std::vector<UsageSample>& samples);
// GET /sandboxes/metrics: {"sandboxes": {id: SandboxMetric}}.
std::string EncodeMetricsBySandbox(const std::map<std::string, UsageSample>& latest);

// One E2B `Template` per SandboxTemplate or SandboxSet a key can create from.
struct TemplateInfo {
  std::string name;
  std::string kind;  // "SandboxTemplate" or "SandboxSet"
  base::WallTime created_at{};
  int32_t cpu_count = 0;
  int64_t memory_mb = 0;
  int64_t disk_mb = 0;
};
std::string EncodeTemplates(const std::vector<TemplateInfo>& templates, const ResponseContext& ctx);

}  // namespace warren::server::e2b
