#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "api/json.h"
#include "base/result.h"

namespace warren::api {

// YAML ⇄ JSON with the YAML 1.2 core schema: plain `true`, `1`, `1.5`, `null`, `~` are typed,
// quoted scalars are strings; anchors and aliases are expanded (bounded, so an "alias bomb"
// fails instead of exhausting memory); duplicate keys and non-scalar keys are errors. Errors
// are InvalidArgument and name the line and column ("invalid YAML at line 3, column 5: ...").

// Every document of a multi-document stream ("---" separated); empty documents are skipped.
Result<std::vector<Json>> ParseYamlDocuments(std::string_view text);
// Exactly one document (an empty stream is an error, as is more than one).
Result<Json> ParseYaml(std::string_view text);

// Manifests in either format: text whose first non-blank character is '{' or '[' is JSON (one
// document; a top-level array gives one document per element), anything else YAML.
Result<std::vector<Json>> ParseManifests(std::string_view text);

// Block-style YAML, keys in the document's order (sorted), strings that would read back as
// another type quoted, multi-line strings as literal blocks. Ends with a newline.
std::string DumpYaml(const Json& doc);

}  // namespace warren::api
