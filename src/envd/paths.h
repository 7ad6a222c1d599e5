#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "os/user_db.h"

namespace warren::envd {

// Lexical clean like Go's filepath.Clean: collapses "//", removes ".", resolves ".." (never
// above "/"), no trailing slash; "" → ".".
std::string CleanPath(std::string_view path);

// Resolves a path argument of an RPC or of /files the way E2B's envd does (e2b-protocol.md
// §3.2): empty → the default workdir (else the home directory), "~" and "~/x" → the user's home,
// absolute → cleaned, relative → joined to the user's home and cleaned. Refused with
// InvalidArgument: a NUL byte, "~otheruser", and a relative path whose ".." climbs out of the
// home directory (write it as an absolute path instead: we will not guess what an escaping
// relative path meant).
Result<std::string> ResolvePath(std::string_view path, const os::UserInfo& user,
                                const std::optional<std::string>& default_workdir);

// The user an RPC acts as: the name in `Authorization: Basic base64(name:)`, else `fallback`.
// InvalidArgument when the header is present but malformed.
Result<std::string> UserFromBasicAuth(std::optional<std::string_view> authorization,
                                      std::string_view fallback);

}  // namespace warren::envd
