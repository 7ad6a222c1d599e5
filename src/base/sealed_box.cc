#include "base/sealed_box.h"

#include <fmt/format.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <memory>

#include "base/check.h"
#include "base/encoding.h"
#include "base/secret_file.h"

namespace warren::base {
namespace {

constexpr std::string_view kPrefix = "v1.";
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

struct CipherCtxFree {
  void operator()(EVP_CIPHER_CTX* ctx) const { EVP_CIPHER_CTX_free(ctx); }
};
using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, CipherCtxFree>;

const unsigned char* Bytes(std::string_view s) {
  return reinterpret_cast<const unsigned char*>(s.data());
}
unsigned char* Bytes(std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); }

}  // namespace

Result<SealedBox> SealedBox::LoadOrCreate(const std::string& path) {
  ASSIGN_OR_RETURN(std::string hex, LoadOrCreateSecretFile(path, 32));
  auto key = HexDecode(std::string_view(hex).substr(0, 64));
  if (!key) return DataLossError(fmt::format("{}: the seal key is not hex", path));
  return SealedBox(std::move(*key));
}

SealedBox SealedBox::ForTesting(std::string_view seed) { return SealedBox(Sha256(seed)); }

bool SealedBox::LooksSealed(std::string_view value) { return value.starts_with(kPrefix); }

std::string SealedBox::Token(std::string_view context) const {
  // A key of its own, so a token never equals anything sealed or derived for another purpose.
  const std::string token_key = HmacSha256(key_, "warren token key v1");
  return HexEncode(HmacSha256(token_key, context));
}

std::string SealedBox::Seal(std::string_view plaintext, std::string_view context) const {
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  // Failures below are a broken OpenSSL, not bad input: CHECK.
  CHECK(RAND_bytes(Bytes(out), kNonceBytes) == 1);
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  CHECK(ctx != nullptr);
  int len = 0;
  CHECK(EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key_), Bytes(out)) == 1);
  CHECK(EVP_EncryptUpdate(ctx.get(), nullptr, &len, Bytes(context),
                          static_cast<int>(context.size())) == 1);
  unsigned char* body = Bytes(out) + kNonceBytes;
  CHECK(EVP_EncryptUpdate(ctx.get(), body, &len, Bytes(plaintext),
                          static_cast<int>(plaintext.size())) == 1);
  int tail = 0;
  CHECK(EVP_EncryptFinal_ex(ctx.get(), body + len, &tail) == 1);
  CHECK(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, kTagBytes, body + plaintext.size()) ==
        1);
  return std::string(kPrefix) + Base64UrlEncode(out);
}

Result<std::string> SealedBox::Open(std::string_view sealed, std::string_view context) const {
  if (!LooksSealed(sealed)) return DataLossError("not a sealed value");
  auto raw = Base64Decode(sealed.substr(kPrefix.size()));
  if (!raw || raw->size() < kNonceBytes + kTagBytes) {
    return DataLossError("a sealed value that is not well-formed");
  }
  std::string_view nonce = std::string_view(*raw).substr(0, kNonceBytes);
  std::string_view body =
      std::string_view(*raw).substr(kNonceBytes, raw->size() - kNonceBytes - kTagBytes);
  std::string tag = raw->substr(raw->size() - kTagBytes);
  std::string plain(body.size(), '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new());
  CHECK(ctx != nullptr);
  int len = 0;
  CHECK(EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, Bytes(key_), Bytes(nonce)) == 1);
  CHECK(EVP_DecryptUpdate(ctx.get(), nullptr, &len, Bytes(context),
                          static_cast<int>(context.size())) == 1);
  CHECK(EVP_DecryptUpdate(ctx.get(), Bytes(plain), &len, Bytes(body),
                          static_cast<int>(body.size())) == 1);
  CHECK(EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, kTagBytes, Bytes(tag)) == 1);
  int tail = 0;
  if (EVP_DecryptFinal_ex(ctx.get(), Bytes(plain) + len, &tail) != 1) {
    return DataLossError("a sealed value that does not open with this install's key here");
  }
  return plain;
}

}  // namespace warren::base
