#include "node/relay_wire.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <type_traits>

#include "base/strings.h"

namespace warren::node {
namespace {

using Json = nlohmann::json;

int64_t UnixMillis(base::WallTime t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

Result<Json> Parse(std::string_view text, std::string_view what) {
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_array()) {
    return InvalidArgumentError(fmt::format("the node relay's {} are not a JSON array", what));
  }
  return j;
}

// A number field of one element, or an error naming it.
template <class T>
Status Field(const Json& item, const char* key, T& out, std::string_view what) {
  auto it = item.find(key);
  if (it == item.end() || !it->is_number()) {
    return InvalidArgumentError(
        fmt::format("the node relay's {} lack a numeric \"{}\"", what, key));
  }
  if constexpr (std::is_integral_v<T>) {
    // A float or a value out of range is not an answer a node gives.
    if (!it->is_number_integer() ||
        (std::is_unsigned_v<T> && it->is_number_integer() && !it->is_number_unsigned() &&
         it->template get<int64_t>() < 0)) {
      return InvalidArgumentError(
          fmt::format("the node relay's {} hold a non-integer \"{}\"", what, key));
    }
  }
  out = it->get<T>();
  return Status::Ok();
}

}  // namespace

std::string EncodeStats(const std::vector<StatsSample>& samples) {
  Json out = Json::array();
  for (const StatsSample& s : samples) {
    out.push_back({{"timeMs", UnixMillis(s.time)},
                   {"cpuUsageNs", s.cpu_usage_ns},
                   {"cpuUsedPct", s.cpu_used_pct},
                   {"cpuCount", s.cpu_count},
                   {"memoryBytes", s.memory_bytes},
                   {"memoryLimitBytes", s.memory_limit_bytes},
                   {"diskBytes", s.disk_bytes},
                   {"diskLimitBytes", s.disk_limit_bytes},
                   {"pids", s.pids},
                   {"oomKills", s.oom_kills}});
  }
  return out.dump();
}

Result<std::vector<StatsSample>> DecodeStats(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, Parse(text, "stats"));
  std::vector<StatsSample> out;
  for (const Json& item : j) {
    if (!item.is_object()) return InvalidArgumentError("the node relay's stats hold a non-object");
    StatsSample s;
    int64_t ms = 0;
    RETURN_IF_ERROR(Field(item, "timeMs", ms, "stats"));
    s.time = base::WallTime(std::chrono::milliseconds(ms));
    RETURN_IF_ERROR(Field(item, "cpuUsageNs", s.cpu_usage_ns, "stats"));
    RETURN_IF_ERROR(Field(item, "cpuUsedPct", s.cpu_used_pct, "stats"));
    RETURN_IF_ERROR(Field(item, "cpuCount", s.cpu_count, "stats"));
    RETURN_IF_ERROR(Field(item, "memoryBytes", s.memory_bytes, "stats"));
    RETURN_IF_ERROR(Field(item, "memoryLimitBytes", s.memory_limit_bytes, "stats"));
    RETURN_IF_ERROR(Field(item, "diskBytes", s.disk_bytes, "stats"));
    RETURN_IF_ERROR(Field(item, "diskLimitBytes", s.disk_limit_bytes, "stats"));
    RETURN_IF_ERROR(Field(item, "pids", s.pids, "stats"));
    RETURN_IF_ERROR(Field(item, "oomKills", s.oom_kills, "stats"));
    out.push_back(s);
  }
  return out;
}

std::string EncodeLogLines(const std::vector<base::LogLine>& lines) {
  Json out = Json::array();
  for (const base::LogLine& l : lines) {
    // Log text is whatever the sandbox printed: not necessarily UTF-8.
    out.push_back(
        {{"ms", l.unix_ms}, {"stderr", l.stream == base::LogStream::kStderr}, {"text", l.text}});
  }
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Result<std::vector<base::LogLine>> DecodeLogLines(std::string_view text) {
  ASSIGN_OR_RETURN(Json j, Parse(text, "log lines"));
  std::vector<base::LogLine> out;
  for (const Json& item : j) {
    if (!item.is_object() || !item.contains("text") || !item["text"].is_string() ||
        !item.contains("stderr") || !item["stderr"].is_boolean()) {
      return InvalidArgumentError("the node relay's log lines lack \"text\" or \"stderr\"");
    }
    base::LogLine l;
    RETURN_IF_ERROR(Field(item, "ms", l.unix_ms, "log lines"));
    l.stream = item["stderr"].get<bool>() ? base::LogStream::kStderr : base::LogStream::kStdout;
    l.text = item["text"].get<std::string>();
    out.push_back(std::move(l));
  }
  return out;
}

std::string EncodeLogQuery(const base::LogLineQuery& q) {
  std::string out =
      fmt::format("limit={}&backward={}&stderrOnly={}", q.limit, q.backward, q.stderr_only);
  if (q.cursor_ms) out += fmt::format("&cursorMs={}", *q.cursor_ms);
  if (!q.search.empty()) out += "&search=" + base::PercentEncode(q.search);
  return out;
}

Result<base::LogLineQuery> DecodeLogQuery(
    const std::vector<std::pair<std::string, std::string>>& params) {
  base::LogLineQuery q;
  for (const auto& [name, value] : params) {
    if (name == "cursorMs" || name == "limit") {
      auto n = base::ParseInt64(value);
      if (!n || *n < 0) {
        return InvalidArgumentError(
            fmt::format("{} must be a non-negative integer, got \"{}\"", name, value));
      }
      if (name == "limit") {
        q.limit = static_cast<size_t>(*n);
      } else {
        q.cursor_ms = *n;
      }
    } else if (name == "backward" || name == "stderrOnly") {
      if (value != "true" && value != "false") {
        return InvalidArgumentError(
            fmt::format("{} must be true or false, got \"{}\"", name, value));
      }
      (name == "backward" ? q.backward : q.stderr_only) = value == "true";
    } else if (name == "search") {
      q.search = value;
    }
  }
  return q;
}

std::string EncodeRelayError(const Status& status) {
  Json j{{"code", HttpStatusFromCode(status.code())},
         {"status", std::string(ConnectCodeName(status.code()))},
         {"message", status.message()}};
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

Status DecodeRelayError(int http_status, std::string_view body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object() && j.contains("status") && j["status"].is_string() && j.contains("message") &&
      j["message"].is_string()) {
    StatusCode code = CodeFromConnectName(j["status"].get<std::string>());
    if (code != StatusCode::kOk) return Status(code, j["message"].get<std::string>());
  }
  std::string text(body.substr(0, 512));
  // Not our answer (a proxy, another service at the address): never "ok".
  StatusCode code = CodeFromHttpStatus(http_status);
  if (code == StatusCode::kOk) code = StatusCode::kUnavailable;
  return Status(code, fmt::format("the node relay answered {}: {}", http_status, text));
}

}  // namespace warren::node
