#include "envd/proto_json.h"

#include <fmt/format.h>

#include <cmath>

#include "base/encoding.h"
#include "base/strings.h"

namespace warren::envd::pj {
namespace {

Status TypeError(std::string_view field, std::string_view want) {
  return InvalidArgumentError(fmt::format("invalid field '{}': expected {}", field, want));
}

}  // namespace

Result<Json> ParseObject(std::string_view body) {
  if (base::TrimSpace(body).empty()) return Json::object();
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return InvalidArgumentError("invalid JSON in request body");
  if (!j.is_object()) return InvalidArgumentError("request body must be a JSON object");
  return j;
}

const Json* Find(const Json& obj, std::string_view camel, std::string_view snake) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(camel);
  if (it == obj.end() && snake != camel) it = obj.find(snake);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Result<std::optional<std::string>> String(const Json& obj, std::string_view camel,
                                          std::string_view snake) {
  const Json* v = Find(obj, camel, snake);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return TypeError(camel, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

Result<std::optional<bool>> Bool(const Json& obj, std::string_view camel, std::string_view snake) {
  const Json* v = Find(obj, camel, snake);
  if (!v) return std::optional<bool>();
  if (!v->is_boolean()) return TypeError(camel, "a boolean");
  return std::optional<bool>(v->get<bool>());
}

namespace {

// proto3 JSON integers may be numbers (integral, or floats with no fraction) or decimal strings.
Result<std::optional<int64_t>> Integer(const Json* v, std::string_view field, int64_t min,
                                       int64_t max) {
  if (!v) return std::optional<int64_t>();
  std::optional<int64_t> out;
  if (v->is_number_unsigned()) {
    auto u = v->get<uint64_t>();
    if (u <= static_cast<uint64_t>(INT64_MAX)) out = static_cast<int64_t>(u);
  } else if (v->is_number_integer()) {
    out = v->get<int64_t>();
  } else if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::isfinite(d) && std::trunc(d) == d && d >= -9.2e18 && d <= 9.2e18) {
      out = static_cast<int64_t>(d);
    }
  } else if (v->is_string()) {
    out = base::ParseInt64(v->get_ref<const std::string&>());
  } else {
    return TypeError(field, "an integer");
  }
  if (!out || *out < min || *out > max) {
    return InvalidArgumentError(fmt::format("invalid field '{}': integer out of range", field));
  }
  return out;
}

}  // namespace

Result<std::optional<uint32_t>> Uint32(const Json& obj, std::string_view camel,
                                       std::string_view snake) {
  ASSIGN_OR_RETURN(auto v, Integer(Find(obj, camel, snake), camel, 0, UINT32_MAX));
  if (!v) return std::optional<uint32_t>();
  return std::optional<uint32_t>(static_cast<uint32_t>(*v));
}

Result<std::optional<int64_t>> Int64(const Json& obj, std::string_view camel,
                                     std::string_view snake) {
  return Integer(Find(obj, camel, snake), camel, INT64_MIN, INT64_MAX);
}

Result<std::optional<std::string>> Bytes(const Json& obj, std::string_view camel,
                                         std::string_view snake) {
  const Json* v = Find(obj, camel, snake);
  if (!v) return std::optional<std::string>();
  if (!v->is_string()) return TypeError(camel, "base64 bytes");
  auto decoded = base::Base64Decode(v->get_ref<const std::string&>());
  if (!decoded) return TypeError(camel, "base64 bytes");
  return std::optional<std::string>(std::move(*decoded));
}

Result<std::vector<std::string>> StringList(const Json& obj, std::string_view camel,
                                            std::string_view snake) {
  std::vector<std::string> out;
  const Json* v = Find(obj, camel, snake);
  if (!v) return out;
  if (!v->is_array()) return TypeError(camel, "a list of strings");
  for (const auto& item : *v) {
    if (!item.is_string()) return TypeError(camel, "a list of strings");
    out.push_back(item.get<std::string>());
  }
  return out;
}

Result<std::map<std::string, std::string>> StringMap(const Json& obj, std::string_view camel,
                                                     std::string_view snake) {
  std::map<std::string, std::string> out;
  const Json* v = Find(obj, camel, snake);
  if (!v) return out;
  if (!v->is_object()) return TypeError(camel, "a map of strings");
  for (const auto& [k, item] : v->items()) {
    if (!item.is_string()) return TypeError(camel, "a map of strings");
    out[k] = item.get<std::string>();
  }
  return out;
}

Result<const Json*> Message(const Json& obj, std::string_view camel, std::string_view snake) {
  const Json* v = Find(obj, camel, snake);
  if (v && !v->is_object()) return TypeError(camel, "an object");
  return v;
}

Result<std::optional<int>> Enum(const Json& obj, std::string_view camel, std::string_view snake,
                                const std::vector<std::pair<std::string_view, int>>& names) {
  const Json* v = Find(obj, camel, snake);
  if (!v) return std::optional<int>();
  if (v->is_string()) {
    const auto& s = v->get_ref<const std::string&>();
    for (const auto& [name, number] : names) {
      if (s == name) return std::optional<int>(number);
    }
    return InvalidArgumentError(fmt::format("invalid field '{}': unknown value '{}'", camel, s));
  }
  ASSIGN_OR_RETURN(auto n, Integer(v, camel, INT32_MIN, INT32_MAX));
  return std::optional<int>(static_cast<int>(*n));
}

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

}  // namespace warren::envd::pj
