#include "envd/signature.h"

#include <fmt/format.h>

#include "base/encoding.h"
#include "base/strings.h"

namespace warren::envd {

std::string FileSignature(std::string_view path, std::string_view operation,
                          std::string_view username, std::string_view access_token,
                          std::optional<int64_t> expiration) {
  std::string payload = fmt::format("{}:{}:{}:{}", path, operation, username, access_token);
  if (expiration) payload += fmt::format(":{}", *expiration);
  return "v1_" + base::Base64EncodeNoPad(base::Sha256(payload));
}

Status CheckAccessToken(const std::optional<std::string>& configured_token,
                        const std::optional<std::string>& header_token) {
  if (!configured_token) return Status::Ok();
  if (header_token && base::ConstantTimeEquals(*header_token, *configured_token)) {
    return Status::Ok();
  }
  return UnauthenticatedError(std::string(kUnauthorizedMessage));
}

Status CheckFileAccess(const std::optional<std::string>& configured_token, const FileAccess& access,
                       int64_t now_unix) {
  if (!configured_token) return Status::Ok();
  if (access.header_token) return CheckAccessToken(configured_token, access.header_token);
  if (!access.signature) return UnauthenticatedError("missing signature query parameter");
  std::optional<int64_t> expiration;
  if (access.signature_expiration) {
    expiration = base::ParseInt64(*access.signature_expiration);
    if (!expiration) return UnauthenticatedError("invalid signature expiration");
  }
  const std::string expected =
      FileSignature(access.path, access.operation, access.username, *configured_token, expiration);
  if (!base::ConstantTimeEquals(expected, *access.signature)) {
    return UnauthenticatedError("invalid signature");
  }
  if (expiration && *expiration < now_unix) {
    return UnauthenticatedError("signature is already expired");
  }
  return Status::Ok();
}

}  // namespace warren::envd
