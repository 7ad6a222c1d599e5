#include "api/json.h"

#include <fmt/format.h>

#include "base/json_depth.h"

namespace warren::api {

Result<Json> ParseJson(std::string_view text) {
  if (!base::JsonNestingWithin(text, kMaxJsonDepth)) {
    return InvalidArgumentError(
        fmt::format("invalid JSON: nested deeper than {} levels", kMaxJsonDepth));
  }
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& e) {
    // nlohmann's what() is "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error while parsing value - ..."; keep the part after the id.
    std::string_view what = e.what();
    if (auto pos = what.find("] "); pos != std::string_view::npos) what.remove_prefix(pos + 2);
    return InvalidArgumentError(fmt::format("invalid JSON: {}", what));
  } catch (const std::exception& e) {
    return InvalidArgumentError(fmt::format("invalid JSON: {}", e.what()));
  }
}

std::string DumpJson(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string DumpJsonPretty(const Json& j) {
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string_view JsonTypeName(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null:
      return "null";
    case Json::value_t::boolean:
      return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
      return "integer";
    case Json::value_t::number_float:
      return "number";
    case Json::value_t::string:
      return "string";
    case Json::value_t::array:
      return "array";
    case Json::value_t::object:
      return "object";
    default:
      return "value";
  }
}

size_t JsonDepth(const Json& j) {
  if (!j.is_structured()) return 0;
  size_t deepest = 0;
  for (const auto& child : j) deepest = std::max(deepest, JsonDepth(child));
  return deepest + 1;
}

std::string StringField(const Json& j, std::string_view key, std::string fallback) {
  if (!j.is_object()) return fallback;
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
}

}  // namespace warren::api
