#pragma once

#include <string_view>

#include "api/json.h"

namespace warren::api {

// The subset of kubectl's JSONPath that printer columns use: ".status.phase", keys with escaped
// dots (".metadata.labels.agents\.kruise\.io/pool"), indexes (".items[0]") and equality filters
// (".status.conditions[?(@.type=="Ready")].status"). Returns the first match, or nullptr when
// nothing matches or the path is malformed.
const Json* FindJsonPath(const Json& doc, std::string_view path);

// The matched value as a table cell: strings as they are, other scalars in JSON, "" when
// missing, compact JSON for objects and arrays.
std::string JsonPathText(const Json& doc, std::string_view path);

}  // namespace warren::api
