#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/line_index.h"
#include "base/result.h"
#include "base/status.h"
#include "node/stats_ring.h"

namespace warren::node {

// The context the relay credential is derived under from the cluster's seal key
// (SealedBox::Token): every server and node holding that key holds the credential.
inline constexpr const char* kRelayTokenContext = "warren node relay v1";

// The Upgrade protocol the relay's dial route answers.
inline constexpr const char* kRelayUpgrade = "warren-relay";

// The bodies of the node relay (relay_routes.h), written by the node and read by the servers:
// the one place both ends agree on. Decoding treats the text as untrusted (a node could be
// anything that holds the credential): wrong types and missing fields are errors, not throws.

std::string EncodeStats(const std::vector<StatsSample>& samples);
Result<std::vector<StatsSample>> DecodeStats(std::string_view text);

std::string EncodeLogLines(const std::vector<base::LogLine>& lines);
Result<std::vector<base::LogLine>> DecodeLogLines(std::string_view text);

// LogLineQuery as query parameters ("cursorMs=…&backward=true&…") and back.
std::string EncodeLogQuery(const base::LogLineQuery& query);
Result<base::LogLineQuery> DecodeLogQuery(
    const std::vector<std::pair<std::string, std::string>>& params);

// An error as the relay answers it: {"code": <http>, "status": "<connect name>", "message"}.
std::string EncodeRelayError(const Status& status);
// The Status such an answer stands for; one that is not ours (a proxy in between) is mapped
// from its HTTP status with the body as the message.
Status DecodeRelayError(int http_status, std::string_view body);

}  // namespace warren::node
