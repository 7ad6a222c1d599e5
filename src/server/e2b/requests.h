#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/types/sandbox_claim.h"
#include "api/volume_mounts.h"
#include "base/clock.h"
#include "base/line_index.h"
#include "base/result.h"
#include "sbnet/egress_policy.h"

namespace warren::server::e2b {

// Parsers for the bodies and queries of the E2B control-plane API (e2b-protocol.md §2). Each
// takes untrusted bytes and returns either the typed request or InvalidArgument naming the
// field that was wrong; unknown JSON fields are ignored (the SDKs add fields over time).

// Limits applied to every create; also the defaults the E2B API documents.
struct TimeoutRules {
  int64_t default_seconds = 300;  // v2; v1 documents 15
  int64_t max_seconds = 86400;
  // The longest a create may ask to wait for its sandbox (the wait-ready-timeout-seconds and
  // claim-timeout-seconds extensions): each wait holds an API thread, so it is bounded.
  int64_t max_wait_seconds = 600;
};

// POST /sandboxes and POST /v2/sandboxes.
struct CreateRequest {
  std::string template_id;
  int64_t timeout_seconds = 0;                  // validated: 1..max
  std::map<std::string, std::string> metadata;  // user metadata, extensions removed
  std::map<std::string, std::string> env_vars;
  bool auto_pause = false;
  // autoPauseMemory: false → the timeout's pause keeps files only (processes end).
  bool auto_pause_memory = true;
  bool auto_resume = false;
  bool secure = true;  // v1 only: false = no envd access token
  std::optional<bool> allow_internet_access;
  // allow_internet_access and network.allowOut/denyOut, when either was given.
  std::optional<sbnet::EgressPolicy> network;
  // network.allowPublicTraffic: false → every port but envd's asks for the traffic token.
  bool public_traffic = true;
  // network.maskRequestHost: the Host the sandbox's ports see ("${PORT}" → the port); empty =
  // the client's.
  std::string mask_request_host;
  // OpenKruise metadata extensions (e2b.agents.kruise.io/...), taken out of `metadata`.
  bool never_timeout = false;
  std::optional<std::chrono::seconds> wait_ready_timeout;
  std::optional<std::chrono::seconds> claim_timeout;
  std::optional<bool> create_on_no_stock;
  // image, cpu-request, cpu-limit: the sandbox runs this image and cpu instead of its
  // template's (a pool member is updated in place before the create answers).
  std::optional<api::InplaceUpdateSpec> inplace_update;
  // volumeMounts: team Volumes by name, each at an absolute path (such a create is not served
  // by a pool: members cannot gain mounts once running).
  std::vector<api::VolumeMountRequest> volume_mounts;
};
Result<CreateRequest> ParseCreateRequest(std::string_view body, const TimeoutRules& rules);

// PUT /sandboxes/{id}/network: {allowOut?, denyOut?, allow_internet_access?} replaces the whole
// policy (an absent list is an empty one).
Result<sbnet::EgressPolicy> ParseNetworkUpdate(std::string_view body);

// POST /sandboxes/{id}/connect (and /v2/...): the body is optional; timeout defaults to 300.
struct ConnectRequest {
  int64_t timeout_seconds = 0;
  // memory: false (the SDK's onResume 'reboot'): a paused sandbox resumes without its memory,
  // booting again on its files. Absent: as it was paused.
  std::optional<bool> memory;
};
Result<ConnectRequest> ParseConnectRequest(std::string_view body, const TimeoutRules& rules);

// POST /sandboxes/{id}/pause: {} or {"memory": bool}; memory defaults to true (processes and
// memory kept). false: the processes end and the files stay (a reboot on the next connect).
Result<bool> ParsePauseMemory(std::string_view body);

// POST /sandboxes/{id}/snapshots: {"name"?: string}. The name is free text the list filters on
// (at most 256 bytes, printable).
Result<std::string> ParseSnapshotName(std::string_view body);

// POST /sandboxes/{id}/fork: {"count"?: 1..max_count (default 1), "timeout"?: seconds (default
// 15, E2B's)}.
struct ForkRequest {
  int64_t count = 1;
  int64_t timeout_seconds = 15;
};
Result<ForkRequest> ParseForkRequest(std::string_view body, const TimeoutRules& rules,
                                     int64_t max_count);

// GET /snapshots?sandboxID=&name=&limit=&nextToken=
struct SnapshotQuery {
  std::string sandbox_id;
  std::string name;
  int64_t limit = 100;
  std::string next_token;
};
Result<SnapshotQuery> ParseSnapshotQuery(
    const std::vector<std::pair<std::string, std::string>>& params);

// POST /sandboxes/{id}/timeout: {"timeout": N}, required. 0 ends the sandbox now.
Result<int64_t> ParseTimeoutRequest(std::string_view body, const TimeoutRules& rules);

// POST /sandboxes/{id}/refreshes: {"duration": N} optional (default 60), extend-only.
Result<int64_t> ParseRefreshRequest(std::string_view body, const TimeoutRules& rules);

enum class SortOrder { kDesc, kAsc };

// GET /v2/sandboxes (and v1 GET /sandboxes with running_only).
struct ListQuery {
  bool want_running = true;
  bool want_paused = true;
  std::map<std::string, std::string> metadata;  // every pair must match
  int64_t limit = 100;
  std::string next_token;  // raw, decoded by the lister
  SortOrder order = SortOrder::kDesc;
  std::optional<base::WallTime> started_after;
  std::string template_id;  // empty = any
};
// `params` are the decoded query parameters (net::Request::QueryParams).
Result<ListQuery> ParseListQuery(const std::vector<std::pair<std::string, std::string>>& params);

// The metadata filter as both SDKs send it: the query value (already decoded once) is
// percent-encoded "k=v&k2=v2" whose keys and values are percent-encoded once more
// (e2b-protocol.md §2.3). Returns the pairs, or InvalidArgument.
Result<std::map<std::string, std::string>> DecodeMetadataFilter(std::string_view value);

// GET /sandboxes/{id}/metrics?start=&end= (unix seconds, both optional).
struct MetricsQuery {
  std::optional<base::WallTime> start;
  std::optional<base::WallTime> end;
};
Result<MetricsQuery> ParseMetricsQuery(
    const std::vector<std::pair<std::string, std::string>>& params);

// GET /sandboxes/{id}/logs?start=&limit= (v1: forward from `start` ms) and
// GET /v2/sandboxes/{id}/logs?cursor=&limit=&direction=&level=&search= (v2).
inline constexpr size_t kMaxLogsLimit = 1000;
Result<base::LogLineQuery> ParseLogsQuery(
    const std::vector<std::pair<std::string, std::string>>& params, bool v2);

// GET /sandboxes/metrics?sandbox_ids=a,b (comma-separated; the parameter may repeat).
inline constexpr size_t kMaxMetricsSandboxes = 100;
Result<std::vector<std::string>> ParseSandboxIds(
    const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace warren::server::e2b
