#pragma once

#include <string>
#include <string_view>

namespace warren::server::auth {

// API keys as the E2B SDKs accept them: "e2b_" followed by 40 lowercase hex characters (160
// random bits). The Python SDK checks `^e2b_[0-9a-f]+$`, so nothing else may appear.
inline constexpr std::string_view kApiKeyPrefix = "e2b_";
inline constexpr size_t kApiKeyHexChars = 40;

// A fresh key from the kernel CSPRNG.
std::string NewApiKey();

// Whether `key` has the shape NewApiKey produces (cheap reject before any hashing).
bool IsWellFormedApiKey(std::string_view key);

// What is stored instead of the key: hex SHA-256 of pepper + key. The pepper is random per
// install and lives beside the key file, so a leaked key file alone cannot be brute-forced
// against precomputed tables.
std::string HashApiKey(std::string_view pepper, std::string_view key);

// The key as it may be shown after creation: "e2b_1a2b...9f0e" (prefix and the last 4
// characters), enough to tell keys apart in `warren apikey ls`.
std::string MaskApiKey(std::string_view key);

}  // namespace warren::server::auth
