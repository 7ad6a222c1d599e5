#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace warren::envd {

// The v1 URL signature of /files (e2b-protocol.md §3.1):
// "v1_" + base64(sha256("<path>:<operation>:<username>:<token>[:<expiration>]")), standard
// alphabet, no padding. `operation` is "read" or "write".
std::string FileSignature(std::string_view path, std::string_view operation,
                          std::string_view username, std::string_view access_token,
                          std::optional<int64_t> expiration);

// What a /files request presents to be let in.
struct FileAccess {
  std::optional<std::string> header_token;  // X-Access-Token
  std::string path;                         // `path` query value (decoded), "" if absent
  std::string username;                     // `username` query value, "" if absent
  std::optional<std::string> signature;
  std::optional<std::string> signature_expiration;
  std::string operation;  // "read" | "write"
};

// The message of every 401 for a missing or wrong access token.
inline constexpr std::string_view kUnauthorizedMessage =
    "unauthorized access, please provide a valid access token or method signing if supported";

// Ok when no token is configured, when the header token matches, or when the signature is
// valid and not expired at `now_unix`. Otherwise Unauthenticated with E2B's exact message.
Status CheckFileAccess(const std::optional<std::string>& configured_token, const FileAccess& access,
                       int64_t now_unix);

// Ok when no token is configured or `header_token` matches it (Connect RPCs, /envs, ...).
Status CheckAccessToken(const std::optional<std::string>& configured_token,
                        const std::optional<std::string>& header_token);

}  // namespace warren::envd
