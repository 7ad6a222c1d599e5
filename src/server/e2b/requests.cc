#include "server/e2b/requests.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <set>

#include "api/json.h"
#include "api/validation.h"
#include "api/volume_mounts.h"
#include "base/strings.h"
#include "base/time_format.h"

namespace warren::server::e2b {
namespace {

using api::Json;

constexpr std::string_view kExtensionPrefix = "e2b.agents.kruise.io/";
constexpr std::string_view kSystemPrefix = "agents.kruise.io/";
constexpr size_t kMaxMapBytes = 64 * 1024;
constexpr int64_t kDefaultConnectTimeout = 300;
constexpr int64_t kDefaultRefresh = 60;

Result<Json> ParseObjectBody(std::string_view body, bool allow_empty) {
  if (base::TrimSpace(body).empty()) {
    if (allow_empty) return Json::object();
    return InvalidArgumentError("the request body is empty: expected a JSON object");
  }
  auto doc = api::ParseJson(body);
  if (!doc.ok()) return InvalidArgumentError("invalid JSON body: " + doc.status().message());
  if (!doc->is_object()) {
    return InvalidArgumentError(
        fmt::format("the request body must be a JSON object, got {}", api::JsonTypeName(*doc)));
  }
  return std::move(*doc);
}

// An integer field; integral floats (30.0) are accepted, anything else is an error naming it.
Result<std::optional<int64_t>> IntField(const Json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::optional<int64_t>();
  if (it->is_number_integer()) {
    if (it->is_number_unsigned() &&
        it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return InvalidArgumentError(fmt::format("{} is out of range", name));
    }
    return std::optional<int64_t>(it->get<int64_t>());
  }
  if (it->is_number_float()) {
    double d = it->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 9e15) {
      return std::optional<int64_t>(static_cast<int64_t>(d));
    }
  }
  return InvalidArgumentError(
      fmt::format("{} must be an integer number of seconds, got {}", name, api::DumpJson(*it)));
}

// A list of strings (absent or null: empty), for the network fields.
Result<std::optional<bool>> BoolField(const Json& obj, const char* name) {
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return std::optional<bool>();
  if (!it->is_boolean()) {
    return InvalidArgumentError(
        fmt::format("{} must be a boolean, got {}", name, api::JsonTypeName(*it)));
  }
  return std::optional<bool>(it->get<bool>());
}

// E2B's egress fields: allowOut/denyOut of `lists` (the create's network object, or an update's
// body) under allow_internet_access, validated as the node keeps them (sbnet).
Result<sbnet::EgressPolicy> EgressPolicyFromE2b(const Json& lists, std::optional<bool> allow) {
  for (const char* unsupported : {"rules", "egressProxy"}) {
    if (auto u = lists.find(unsupported); u != lists.end() && !u->is_null()) {
      return InvalidArgumentError(
          fmt::format("network.{} is not supported by this server yet", unsupported));
    }
  }
  Json policy = Json::object();
  policy["allowInternetAccess"] = allow.value_or(true);
  for (const char* key : {"allowOut", "denyOut"}) {
    if (auto it = lists.find(key); it != lists.end()) policy[key] = *it;
  }
  return sbnet::EgressPolicyFromJson(policy);
}

Result<std::map<std::string, std::string>> StringMapField(const Json& obj, const char* name) {
  std::map<std::string, std::string> out;
  auto it = obj.find(name);
  if (it == obj.end() || it->is_null()) return out;
  if (!it->is_object()) {
    return InvalidArgumentError(
        fmt::format("{} must be an object of strings, got {}", name, api::JsonTypeName(*it)));
  }
  size_t bytes = 0;
  for (const auto& [k, v] : it->items()) {
    if (!v.is_string()) {
      return InvalidArgumentError(
          fmt::format("{}[\"{}\"] must be a string, got {}", name, k, api::JsonTypeName(v)));
    }
    bytes += k.size() + v.get_ref<const std::string&>().size();
    out.emplace(k, v.get<std::string>());
  }
  if (bytes > kMaxMapBytes) {
    return InvalidArgumentError(
        fmt::format("{} holds {} bytes; at most {} are accepted", name, bytes, kMaxMapBytes));
  }
  return out;
}

Status CheckTimeout(int64_t seconds, const TimeoutRules& rules, bool allow_zero) {
  if (seconds < 0 || (seconds == 0 && !allow_zero)) {
    return InvalidArgumentError(
        fmt::format("timeout must be {} seconds, got {}", allow_zero ? ">= 0" : "> 0", seconds));
  }
  if (seconds > rules.max_seconds) {
    return InvalidArgumentError(
        fmt::format("timeout {} s is above the maximum of {} s", seconds, rules.max_seconds));
  }
  return Status::Ok();
}

Result<std::chrono::seconds> PositiveSeconds(std::string_view key, std::string_view value) {
  auto n = base::ParseInt64(value);
  if (!n || *n <= 0) {
    return InvalidArgumentError(fmt::format(
        "metadata \"{}\" must be a positive number of seconds, got \"{}\"", key, value));
  }
  return std::chrono::seconds(*n);
}

// A wait the server holds a thread for: positive and at most `max_seconds`.
Result<std::chrono::seconds> WaitSeconds(std::string_view key, std::string_view value,
                                         int64_t max_seconds) {
  ASSIGN_OR_RETURN(std::chrono::seconds s, PositiveSeconds(key, value));
  if (s.count() > max_seconds) {
    return InvalidArgumentError(fmt::format("metadata \"{}\" is {} s, above the maximum of {} s",
                                            key, s.count(), max_seconds));
  }
  return s;
}

Result<bool> BoolText(std::string_view key, std::string_view value) {
  if (value == "true") return true;
  if (value == "false") return false;
  return InvalidArgumentError(
      fmt::format("metadata \"{}\" must be \"true\" or \"false\", got \"{}\"", key, value));
}

// Moves OpenKruise's metadata extensions into the request; rejects reserved keys.
Status TakeExtensions(CreateRequest& r, const TimeoutRules& rules) {
  for (auto it = r.metadata.begin(); it != r.metadata.end();) {
    const std::string& key = it->first;
    if (key.starts_with(kExtensionPrefix)) {
      std::string_view ext = std::string_view(key).substr(kExtensionPrefix.size());
      if (ext == "never-timeout") {
        ASSIGN_OR_RETURN(r.never_timeout, BoolText(key, it->second));
      } else if (ext == "wait-ready-timeout-seconds") {
        ASSIGN_OR_RETURN(r.wait_ready_timeout,
                         WaitSeconds(key, it->second, rules.max_wait_seconds));
      } else if (ext == "claim-timeout-seconds") {
        ASSIGN_OR_RETURN(r.claim_timeout, WaitSeconds(key, it->second, rules.max_wait_seconds));
      } else if (ext == "create-on-no-stock") {
        ASSIGN_OR_RETURN(r.create_on_no_stock, BoolText(key, it->second));
      } else if (ext == "image") {
        const std::string& image = it->second;
        if (image.empty() || image.find_first_of(" \t\r\n") != std::string::npos) {
          return InvalidArgumentError(
              fmt::format("metadata key \"{}\" must name an image, got \"{}\"", key, image));
        }
        if (!r.inplace_update) r.inplace_update.emplace();
        r.inplace_update->image = image;
      } else if (ext == "cpu-request" || ext == "cpu-limit") {
        auto q = api::Quantity::Parse(it->second);
        if (!q.ok() || q->MilliValue() <= 0) {
          return InvalidArgumentError(fmt::format(
              "metadata key \"{}\" must be a positive cpu quantity (\"500m\", \"2\"), got \"{}\"",
              key, it->second));
        }
        if (!r.inplace_update) r.inplace_update.emplace();
        (ext == "cpu-request" ? r.inplace_update->resources.requests
                              : r.inplace_update->resources.limits)["cpu"] = *q;
      } else {
        return InvalidArgumentError(fmt::format(
            "metadata key \"{}\" is not a supported extension (supported: never-timeout, "
            "wait-ready-timeout-seconds, claim-timeout-seconds, create-on-no-stock, image, "
            "cpu-request, cpu-limit)",
            key));
      }
      it = r.metadata.erase(it);
      continue;
    }
    if (key.starts_with(kSystemPrefix)) {
      return InvalidArgumentError(
          fmt::format("metadata key \"{}\" uses the reserved prefix {}", key, kSystemPrefix));
    }
    ++it;
  }
  return Status::Ok();
}

}  // namespace

Result<CreateRequest> ParseCreateRequest(std::string_view body, const TimeoutRules& rules) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, false));
  CreateRequest r;
  auto tid = obj.find("templateID");
  if (tid == obj.end() || tid->is_null()) return InvalidArgumentError("templateID is required");
  if (!tid->is_string()) {
    return InvalidArgumentError(
        fmt::format("templateID must be a string, got {}", api::JsonTypeName(*tid)));
  }
  r.template_id = tid->get<std::string>();
  if (r.template_id.empty()) return InvalidArgumentError("templateID must not be empty");

  ASSIGN_OR_RETURN(auto timeout, IntField(obj, "timeout"));
  r.timeout_seconds = timeout.value_or(rules.default_seconds);
  RETURN_IF_ERROR(CheckTimeout(r.timeout_seconds, rules, false));

  ASSIGN_OR_RETURN(r.metadata, StringMapField(obj, "metadata"));
  RETURN_IF_ERROR(TakeExtensions(r, rules));
  ASSIGN_OR_RETURN(r.env_vars, StringMapField(obj, "envVars"));
  for (const auto& [k, v] : r.env_vars) {
    if (auto err = api::CheckEnvVarName(k)) {
      return InvalidArgumentError(fmt::format("envVars key \"{}\" is not valid: {}", k, *err));
    }
  }
  ASSIGN_OR_RETURN(auto auto_pause, BoolField(obj, "autoPause"));
  r.auto_pause = auto_pause.value_or(false);
  ASSIGN_OR_RETURN(auto auto_pause_memory, BoolField(obj, "autoPauseMemory"));
  r.auto_pause_memory = auto_pause_memory.value_or(true);
  if (auto ar = obj.find("autoResume"); ar != obj.end() && !ar->is_null()) {
    if (!ar->is_object()) {
      return InvalidArgumentError(
          fmt::format("autoResume must be an object, got {}", api::JsonTypeName(*ar)));
    }
    ASSIGN_OR_RETURN(auto enabled, BoolField(*ar, "enabled"));
    r.auto_resume = enabled.value_or(false);
  }
  ASSIGN_OR_RETURN(auto secure, BoolField(obj, "secure"));
  r.secure = secure.value_or(true);
  ASSIGN_OR_RETURN(r.allow_internet_access, BoolField(obj, "allow_internet_access"));
  if (auto n = obj.find("network"); n != obj.end() && !n->is_null()) {
    if (!n->is_object()) {
      return InvalidArgumentError(
          fmt::format("network must be an object, got {}", api::JsonTypeName(*n)));
    }
    ASSIGN_OR_RETURN(auto public_traffic, BoolField(*n, "allowPublicTraffic"));
    r.public_traffic = public_traffic.value_or(true);
    if (auto mask = n->find("maskRequestHost"); mask != n->end() && !mask->is_null()) {
      if (!mask->is_string() || mask->get<std::string>().empty() ||
          mask->get<std::string>().find_first_of(" \t\r\n") != std::string::npos) {
        return InvalidArgumentError(
            "network.maskRequestHost must be a host[:port] without spaces (\"${PORT}\" stands "
            "for the port)");
      }
      r.mask_request_host = mask->get<std::string>();
    }
  }
  // Only a create that asks for something carries a policy (and then is not served by a pool).
  auto n = obj.find("network");
  ASSIGN_OR_RETURN(sbnet::EgressPolicy policy,
                   EgressPolicyFromE2b(n != obj.end() && n->is_object() ? *n : Json::object(),
                                       r.allow_internet_access));
  if (!policy.IsDefault()) r.network = std::move(policy);
  if (auto vm = obj.find("volumeMounts"); vm != obj.end()) {
    ASSIGN_OR_RETURN(r.volume_mounts, api::ParseVolumeMounts(*vm, "volumeMounts"));
  }
  return r;
}

Result<sbnet::EgressPolicy> ParseNetworkUpdate(std::string_view body) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, false));
  ASSIGN_OR_RETURN(auto allow, BoolField(obj, "allow_internet_access"));
  if (!allow) {
    ASSIGN_OR_RETURN(allow, BoolField(obj, "allowInternetAccess"));
  }
  return EgressPolicyFromE2b(obj, allow);
}

Result<ConnectRequest> ParseConnectRequest(std::string_view body, const TimeoutRules& rules) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, true));
  ASSIGN_OR_RETURN(auto timeout, IntField(obj, "timeout"));
  ConnectRequest r;
  r.timeout_seconds = timeout.value_or(kDefaultConnectTimeout);
  RETURN_IF_ERROR(CheckTimeout(r.timeout_seconds, rules, false));
  ASSIGN_OR_RETURN(r.memory, BoolField(obj, "memory"));
  return r;
}

Result<bool> ParsePauseMemory(std::string_view body) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, true));
  ASSIGN_OR_RETURN(auto memory, BoolField(obj, "memory"));
  return memory.value_or(true);
}

Result<std::string> ParseSnapshotName(std::string_view body) {
  constexpr size_t kMaxName = 256;
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, true));
  auto it = obj.find("name");
  if (it == obj.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return InvalidArgumentError(
        fmt::format("name must be a string, got {}", api::JsonTypeName(*it)));
  }
  std::string name = it->get<std::string>();
  if (name.size() > kMaxName) {
    return InvalidArgumentError(fmt::format("name is longer than {} bytes", kMaxName));
  }
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) return InvalidArgumentError("name has a control character");
  }
  return name;
}

Result<ForkRequest> ParseForkRequest(std::string_view body, const TimeoutRules& rules,
                                     int64_t max_count) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, true));
  ForkRequest r;
  ASSIGN_OR_RETURN(auto count, IntField(obj, "count"));
  r.count = count.value_or(1);
  if (r.count < 1 || r.count > max_count) {
    return InvalidArgumentError(
        fmt::format("count must be between 1 and {}, got {}", max_count, r.count));
  }
  ASSIGN_OR_RETURN(auto timeout, IntField(obj, "timeout"));
  r.timeout_seconds = timeout.value_or(r.timeout_seconds);
  RETURN_IF_ERROR(CheckTimeout(r.timeout_seconds, rules, false));
  return r;
}

Result<SnapshotQuery> ParseSnapshotQuery(
    const std::vector<std::pair<std::string, std::string>>& params) {
  SnapshotQuery q;
  for (const auto& [k, v] : params) {
    if (k == "sandboxID") {
      q.sandbox_id = v;
    } else if (k == "name") {
      q.name = v;
    } else if (k == "nextToken") {
      q.next_token = v;
    } else if (k == "limit") {
      auto n = base::ParseInt64(v);
      if (!n || *n < 1 || *n > 1000) {
        return InvalidArgumentError(fmt::format("limit must be 1 to 1000, got \"{}\"", v));
      }
      q.limit = *n;
    }
  }
  return q;
}

Result<int64_t> ParseTimeoutRequest(std::string_view body, const TimeoutRules& rules) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, false));
  ASSIGN_OR_RETURN(auto timeout, IntField(obj, "timeout"));
  if (!timeout) return InvalidArgumentError("timeout is required");
  RETURN_IF_ERROR(CheckTimeout(*timeout, rules, true));
  return *timeout;
}

Result<int64_t> ParseRefreshRequest(std::string_view body, const TimeoutRules& rules) {
  ASSIGN_OR_RETURN(Json obj, ParseObjectBody(body, true));
  ASSIGN_OR_RETURN(auto duration, IntField(obj, "duration"));
  int64_t d = duration.value_or(kDefaultRefresh);
  RETURN_IF_ERROR(CheckTimeout(d, rules, false).WithPrefix("duration"));
  return d;
}

Result<std::map<std::string, std::string>> DecodeMetadataFilter(std::string_view value) {
  std::map<std::string, std::string> out;
  auto inner = base::PercentDecode(value, false);
  if (!inner) return InvalidArgumentError("metadata filter has a malformed percent escape");
  for (std::string_view pair : base::Split(*inner, '&')) {
    if (pair.empty()) continue;
    auto parts = base::Split(pair, '=');
    if (parts.size() != 2) {
      return InvalidArgumentError(
          fmt::format("metadata filter \"{}\" is not of the form key=value", pair));
    }
    auto k = base::PercentDecode(parts[0], false);
    auto v = base::PercentDecode(parts[1], false);
    if (!k || !v) return InvalidArgumentError("metadata filter has a malformed percent escape");
    if (k->empty()) return InvalidArgumentError("metadata filter has an empty key");
    out[*k] = *v;
  }
  return out;
}

Result<ListQuery> ParseListQuery(const std::vector<std::pair<std::string, std::string>>& params) {
  ListQuery q;
  bool state_given = false;
  for (const auto& [name, value] : params) {
    if (name == "state") {
      if (!state_given) q.want_running = q.want_paused = false;
      state_given = true;
      for (std::string_view s : base::SplitNonEmpty(value, ',')) {
        if (s == "running") {
          q.want_running = true;
        } else if (s == "paused") {
          q.want_paused = true;
        } else {
          return InvalidArgumentError(
              fmt::format("state \"{}\" is not valid: use running and/or paused", s));
        }
      }
    } else if (name == "metadata") {
      ASSIGN_OR_RETURN(auto filter, DecodeMetadataFilter(value));
      q.metadata.merge(filter);
    } else if (name == "limit") {
      auto n = base::ParseInt64(value);
      if (!n || *n < 1 || *n > 100) {
        return InvalidArgumentError(
            fmt::format("limit must be an integer from 1 to 100, got \"{}\"", value));
      }
      q.limit = *n;
    } else if (name == "nextToken") {
      q.next_token = value;
    } else if (name == "order") {
      if (value == "asc") {
        q.order = SortOrder::kAsc;
      } else if (value == "desc") {
        q.order = SortOrder::kDesc;
      } else {
        return InvalidArgumentError(fmt::format("order must be asc or desc, got \"{}\"", value));
      }
    } else if (name == "startedAfter") {
      auto t = base::ParseRfc3339(value);
      if (!t) {
        return InvalidArgumentError(
            fmt::format("startedAfter must be an RFC 3339 time, got \"{}\"", value));
      }
      q.started_after = *t;
    } else if (name == "template") {
      q.template_id = value;
    }
  }
  if (state_given && !q.want_running && !q.want_paused) {
    return InvalidArgumentError("state is empty: use running and/or paused");
  }
  return q;
}

Result<MetricsQuery> ParseMetricsQuery(
    const std::vector<std::pair<std::string, std::string>>& params) {
  MetricsQuery q;
  for (const auto& [name, value] : params) {
    if (name != "start" && name != "end") continue;
    auto n = base::ParseInt64(value);
    if (!n || *n < 0 || *n > 1'000'000'000'000) {
      return InvalidArgumentError(
          fmt::format("{} must be a unix time in seconds, got \"{}\"", name, value));
    }
    base::WallTime t{std::chrono::seconds(*n)};
    (name == "start" ? q.start : q.end) = t;
  }
  if (q.start && q.end && *q.start > *q.end) {
    return InvalidArgumentError("start is after end");
  }
  return q;
}

Result<base::LogLineQuery> ParseLogsQuery(
    const std::vector<std::pair<std::string, std::string>>& params, bool v2) {
  base::LogLineQuery q;
  q.limit = kMaxLogsLimit;
  for (const auto& [name, value] : params) {
    if (name == (v2 ? "cursor" : "start")) {
      auto n = base::ParseInt64(value);
      if (!n || *n < 0) {
        return InvalidArgumentError(
            fmt::format("{} must be a unix time in milliseconds, got \"{}\"", name, value));
      }
      q.cursor_ms = *n;
    } else if (name == "limit") {
      auto n = base::ParseInt64(value);
      if (!n || *n < 0 || static_cast<uint64_t>(*n) > kMaxLogsLimit) {
        return InvalidArgumentError(
            fmt::format("limit must be 0..{}, got \"{}\"", kMaxLogsLimit, value));
      }
      q.limit = static_cast<size_t>(*n);
    } else if (v2 && name == "direction") {
      if (value != "forward" && value != "backward") {
        return InvalidArgumentError(
            fmt::format("direction must be forward or backward, got \"{}\"", value));
      }
      q.backward = value == "backward";
    } else if (v2 && name == "level") {
      // The template command's stdout is info, its stderr error (as container logs are read).
      if (value == "warn" || value == "error") {
        q.stderr_only = true;
      } else if (value != "debug" && value != "info") {
        return InvalidArgumentError(
            fmt::format("level must be debug, info, warn or error, got \"{}\"", value));
      }
    } else if (v2 && name == "search") {
      if (value.size() > 1024) return InvalidArgumentError("search is longer than 1024 bytes");
      q.search = value;
    }
  }
  return q;
}

Result<std::vector<std::string>> ParseSandboxIds(
    const std::vector<std::pair<std::string, std::string>>& params) {
  std::vector<std::string> ids;
  for (const auto& [name, value] : params) {
    if (name != "sandbox_ids") continue;
    for (std::string_view id : base::SplitNonEmpty(value, ',')) {
      if (ids.size() == kMaxMetricsSandboxes) {
        return InvalidArgumentError(
            fmt::format("sandbox_ids names more than {} sandboxes", kMaxMetricsSandboxes));
      }
      ids.emplace_back(id);
    }
  }
  if (ids.empty()) return InvalidArgumentError("sandbox_ids is required (comma-separated ids)");
  return ids;
}

}  // namespace warren::server::e2b
