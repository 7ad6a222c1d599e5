#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::api {

// The JSON document type of every wire object. Keys are kept sorted, which is also the order
// kubectl prints them in.
using Json = nlohmann::json;

// Limits applied to every document that comes from outside the process.
inline constexpr size_t kMaxJsonDepth = 100;

// Parses one JSON document. Malformed input, trailing garbage or nesting deeper than
// kMaxJsonDepth → InvalidArgument naming the byte offset. Never throws.
Result<Json> ParseJson(std::string_view text);

// Compact serialisation. Invalid UTF-8 in strings is replaced rather than thrown on.
std::string DumpJson(const Json& j);
// Two-space indented serialisation with a trailing newline (kubectl -o json).
std::string DumpJsonPretty(const Json& j);

// A one-line human-readable name of a JSON value's type: "string", "integer", "object", ...
std::string_view JsonTypeName(const Json& j);

// j[key] when `j` is an object holding a string there, else `fallback`: for documents from
// outside (error bodies), where Json::value throws on a key of another type.
std::string StringField(const Json& j, std::string_view key, std::string fallback = "");

// Nesting depth of a value (a scalar is 0, [] is 1).
size_t JsonDepth(const Json& j);

}  // namespace warren::api
