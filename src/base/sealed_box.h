#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::base {

// Seals short secrets (envd access tokens, /init bodies with the caller's env vars) so they can
// be kept in places others read — an object's annotations, which every reader of the object
// sees — without being readable there: AES-256-GCM under one key per install, a fresh random
// nonce per seal, and a `context` (e.g. "<namespace>/<name>/<annotation key>") bound in as
// associated data, so a sealed value copied onto another object, or under another key, does
// not open. Output: "v1." + base64url(nonce | ciphertext | tag). Value type; thread-safe.
class SealedBox {
 public:
  // The key from `path` (64 hex characters, mode 0600), made on first use.
  static Result<SealedBox> LoadOrCreate(const std::string& path);
  // For tests: a key made from `seed`.
  static SealedBox ForTesting(std::string_view seed = "warren-test");

  std::string Seal(std::string_view plaintext, std::string_view context) const;
  // DataLoss for anything that is not a value this key sealed under `context` (tampered,
  // truncated, another install's, another object's).
  Result<std::string> Open(std::string_view sealed, std::string_view context) const;

  // A token only this install can make for `context` (HMAC-SHA256 under a key derived from the
  // box's, hex): for secrets that need no storage because they can be made again (a volume's
  // content token, bound to the volume's uid).
  std::string Token(std::string_view context) const;

  // Whether `value` has the sealed form (cheap; says nothing about whether it opens).
  static bool LooksSealed(std::string_view value);

 private:
  explicit SealedBox(std::string key) : key_(std::move(key)) {}
  std::string key_;  // 32 raw bytes
};

}  // namespace warren::base
