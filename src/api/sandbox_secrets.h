#pragma once

#include <string>
#include <string_view>

#include "api/object.h"
#include "base/result.h"
#include "base/sealed_box.h"

namespace warren::api {

// The secrets of a Sandbox object — envd's access token and the /init body (which carries the
// caller's env vars) — kept on the object as annotations sealed with the install's key
// (annotations::kSealedAccessToken, kSealedInitRequest; base/sealed_box.h), each bound to the
// object's namespace, name and annotation key. The object can then be read by anyone allowed
// to read it, listed, watched, stored in SQLite or etcd, without giving the secrets away, and
// still carries them through every write the control plane makes (a claim, a recycle, a
// restart that replays /init). Value type; thread-safe.
class SandboxSecrets {
 public:
  explicit SandboxSecrets(base::SealedBox box) : box_(std::move(box)) {}
  static SandboxSecrets ForTesting() { return SandboxSecrets(base::SealedBox::ForTesting()); }

  // "" when the object has none. DataLoss when one is there but does not open (tampered,
  // copied from another object, sealed by another install): treat that sandbox as closed.
  Result<std::string> AccessToken(const Object& sandbox) const;
  Result<std::string> InitRequest(const Object& sandbox) const;
  Result<std::string> TrafficToken(const Object& sandbox) const;

  // Seals `value` onto the object ("" removes it). The object's namespace and name must be set.
  void SetAccessToken(Object& sandbox, std::string_view token) const;
  void SetInitRequest(Object& sandbox, std::string_view body) const;
  void SetTrafficToken(Object& sandbox, std::string_view token) const;
  // The token that opens a Volume's files through E2B's volume content API (`/volumecontent`):
  // made from the volume's uid, so it needs no storage and dies with the volume.
  std::string VolumeToken(const Object& volume) const;

  // Removes every one.
  void Forget(Object& sandbox) const;

  // Objects written before secrets were sealed carry OpenKruise's plain-text annotations
  // (runtime-access-token, init-runtime-request): seals them and removes the plain ones.
  // Returns whether the object changed.
  bool SealPlainText(Object& sandbox) const;

 private:
  Result<std::string> Read(const Object& sandbox, const char* key) const;
  void Write(Object& sandbox, const char* key, std::string_view value) const;

  base::SealedBox box_;
};

}  // namespace warren::api
