#pragma once

// Helpers for the proto3 JSON mapping (what protojson and protobuf-es produce and accept), used
// by the envd message codecs. Parsers accept lowerCamelCase and the original snake_case field
// names, treat a missing field or JSON null as the default value, accept int64 as a string or a
// number, bytes in standard or URL-safe base64 with or without padding, and enums by name or
// number. Every type mismatch is an InvalidArgument naming the field.

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace warren::envd::pj {

using Json = nlohmann::json;

// Parses a request body that must be one JSON object (an empty body is the empty message).
Result<Json> ParseObject(std::string_view body);

// The field's value, or nullptr when absent or null. `snake` may equal `camel`.
const Json* Find(const Json& obj, std::string_view camel, std::string_view snake);

Result<std::optional<std::string>> String(const Json& obj, std::string_view camel,
                                          std::string_view snake);
Result<std::optional<bool>> Bool(const Json& obj, std::string_view camel, std::string_view snake);
Result<std::optional<uint32_t>> Uint32(const Json& obj, std::string_view camel,
                                       std::string_view snake);
Result<std::optional<int64_t>> Int64(const Json& obj, std::string_view camel,
                                     std::string_view snake);
Result<std::optional<std::string>> Bytes(const Json& obj, std::string_view camel,
                                         std::string_view snake);
Result<std::vector<std::string>> StringList(const Json& obj, std::string_view camel,
                                            std::string_view snake);
Result<std::map<std::string, std::string>> StringMap(const Json& obj, std::string_view camel,
                                                     std::string_view snake);
// A nested message: the object, or nullptr when absent; InvalidArgument when not an object.
Result<const Json*> Message(const Json& obj, std::string_view camel, std::string_view snake);

// An enum value by name (from `names`, index = number) or by number.
Result<std::optional<int>> Enum(const Json& obj, std::string_view camel, std::string_view snake,
                                const std::vector<std::pair<std::string_view, int>>& names);

// Serialises compactly; invalid UTF-8 in strings is replaced rather than thrown.
std::string Dump(const Json& j);

}  // namespace warren::envd::pj
