#pragma once

#include <string>
#include <vector>

#include "api/json.h"
#include "base/status.h"

namespace warren::cli {

// One document of a manifest file, with where it came from (for messages).
struct Manifest {
  std::string source;  // the file's path, or "STDIN"
  api::Json doc;
};

// Reads the documents of `arg` as `apply -f` and `delete -f` take it: a file, a directory (its
// *.yaml, *.yml and *.json files in name order; subdirectories too with `recursive`) or "-" for
// stdin. Multi-document YAML, JSON, and `kind: List` (item by item). Appends to `out`; fails
// naming the path that could not be read or parsed.
Status CollectManifests(const std::string& arg, bool recursive, std::vector<Manifest>& out);

// A top-level string field of a document, "" when absent or not a string (documents are
// untrusted until decoded).
std::string StringField(const api::Json& doc, const char* key);

// Where a document goes when several are applied: objects that others name first (templates,
// named by templateRef; then pools, named by claims), then the rest. A directory is read in
// file-name order, so without this the claim of "sandboxclaim.yaml" would be created before the
// pool of "sandboxset.yaml" it claims from and fail its first attempt (Helm orders by kind
// likewise). `apply` sorts by it, stably; `delete -f` goes the other way.
int DependencyRank(const api::Json& doc);

}  // namespace warren::cli
