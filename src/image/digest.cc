#include "image/digest.h"

#include <fmt/format.h>

#include "base/check.h"
#include "base/encoding.h"

namespace warren::image {
namespace {

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

Result<Digest> Digest::Parse(std::string_view text) {
  constexpr std::string_view kPrefix = "sha256:";
  if (text.size() > 100) text = text.substr(0, 100);  // Keeps error messages bounded.
  if (!text.starts_with(kPrefix)) {
    return InvalidArgumentError(fmt::format("digest '{}' is not of the form sha256:<hex>", text));
  }
  std::string_view hex = text.substr(kPrefix.size());
  if (hex.size() != 64 || !IsLowerHex(hex)) {
    return InvalidArgumentError(
        fmt::format("digest '{}' must have 64 lowercase hex characters after sha256:", text));
  }
  return Digest(std::string(hex));
}

Digest Digest::FromHex(std::string_view hex) {
  CHECK_MSG(hex.size() == 64 && IsLowerHex(hex), "bad sha256 hex '" << hex << "'");
  return Digest(std::string(hex));
}

Sha256Stream::Sha256Stream() : ctx_(EVP_MD_CTX_new()) {
  CHECK(ctx_ != nullptr);
  CHECK(EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) == 1);
}

void Sha256Stream::Update(const void* data, size_t size) {
  CHECK(EVP_DigestUpdate(ctx_.get(), data, size) == 1);
  bytes_ += size;
}

Digest Sha256Stream::Finish() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  CHECK(EVP_DigestFinal_ex(ctx_.get(), out, &len) == 1);
  return Digest::FromHex(
      base::HexEncode(std::string_view(reinterpret_cast<const char*>(out), len)));
}

}  // namespace warren::image
