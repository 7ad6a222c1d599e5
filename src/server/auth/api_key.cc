#include "server/auth/api_key.h"

#include "base/encoding.h"
#include "base/ids.h"

namespace warren::server::auth {

std::string NewApiKey() {
  return std::string(kApiKeyPrefix) + base::RandomHex(kApiKeyHexChars / 2);
}

bool IsWellFormedApiKey(std::string_view key) {
  if (!key.starts_with(kApiKeyPrefix)) return false;
  std::string_view hex = key.substr(kApiKeyPrefix.size());
  if (hex.size() != kApiKeyHexChars) return false;
  for (char c : hex) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

std::string HashApiKey(std::string_view pepper, std::string_view key) {
  std::string data;
  data.reserve(pepper.size() + key.size());
  data.append(pepper);
  data.append(key);
  return base::Sha256Hex(data);
}

std::string MaskApiKey(std::string_view key) {
  size_t head = kApiKeyPrefix.size() + 4;
  if (key.size() <= head + 4) return std::string(key.substr(0, kApiKeyPrefix.size())) + "...";
  return std::string(key.substr(0, head)) + "..." + std::string(key.substr(key.size() - 4));
}

}  // namespace warren::server::auth
