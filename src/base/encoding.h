#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace warren::base {

// Standard base64 (RFC 4648 §4) with padding.
std::string Base64Encode(std::string_view bytes);
// Standard base64 without padding (E2B's URL signatures use this form).
std::string Base64EncodeNoPad(std::string_view bytes);
// URL-safe base64 (RFC 4648 §5) without padding: opaque tokens in URLs.
std::string Base64UrlEncode(std::string_view bytes);
// Accepts the standard and the URL-safe alphabets, with or without padding (proto3 JSON asks
// parsers to). Returns nullopt on any other character or an impossible length.
std::optional<std::string> Base64Decode(std::string_view text);

std::string HexEncode(std::string_view bytes);
std::optional<std::string> HexDecode(std::string_view hex);

// SHA-256 digest: raw 32 bytes, and lowercase hex.
std::string Sha256(std::string_view data);
std::string Sha256Hex(std::string_view data);
// HMAC-SHA256 of `data` under `key`, raw 32 bytes.
std::string HmacSha256(std::string_view key, std::string_view data);

// Compares in time independent of where the inputs differ (tokens, signatures).
bool ConstantTimeEquals(std::string_view a, std::string_view b);

}  // namespace warren::base
