#pragma once

#include <openssl/evp.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"

namespace warren::image {

// A content digest in OCI form, "sha256:<64 lowercase hex>". Only sha256 is accepted: it is what
// every registry and builder emits, and a single algorithm keeps the on-disk layout one level.
// A value type; thread-compatible.
class Digest {
 public:
  Digest() = default;

  // Parses "sha256:<hex>"; anything else (other algorithms, upper case, wrong length) is an
  // InvalidArgument naming the bad text.
  static Result<Digest> Parse(std::string_view text);
  // From 64 lowercase hex characters (CHECKs the form: callers pass hasher output).
  static Digest FromHex(std::string_view hex);

  bool empty() const { return hex_.empty(); }
  const std::string& hex() const { return hex_; }
  std::string ToString() const { return "sha256:" + hex_; }
  // The first 12 hex characters, as `docker images` prints them.
  std::string Short() const { return hex_.substr(0, 12); }

  friend bool operator==(const Digest&, const Digest&) = default;
  friend auto operator<=>(const Digest&, const Digest&) = default;

 private:
  explicit Digest(std::string hex) : hex_(std::move(hex)) {}
  std::string hex_;
};

// Incremental SHA-256 over a stream of bytes (layer blobs are too large to hash in one string).
// Owns an OpenSSL digest context. Move-only; not thread-safe.
class Sha256Stream {
 public:
  Sha256Stream();
  void Update(const void* data, size_t size);
  void Update(std::string_view data) { Update(data.data(), data.size()); }
  // Finishes the hash; the stream must not be updated afterwards.
  Digest Finish();
  uint64_t bytes() const { return bytes_; }

 private:
  struct CtxDeleter {
    void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
  };
  std::unique_ptr<EVP_MD_CTX, CtxDeleter> ctx_;
  uint64_t bytes_ = 0;
};

}  // namespace warren::image
