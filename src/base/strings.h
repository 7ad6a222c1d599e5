#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace warren::base {

// Splits on every occurrence of `sep`; an empty input gives one empty piece.
std::vector<std::string_view> Split(std::string_view s, char sep);
// Like Split, but drops empty pieces and trims ASCII whitespace around each.
std::vector<std::string_view> SplitNonEmpty(std::string_view s, char sep);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view TrimSpace(std::string_view s);
std::string AsciiLower(std::string_view s);
bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// Strict decimal parsing: the whole string must be a number in range.
std::optional<int64_t> ParseInt64(std::string_view s);
std::optional<uint64_t> ParseUint64(std::string_view s);

// Percent-decoding of a URL query component ('+' is a space when `plus_is_space`). Returns
// nullopt on a malformed escape.
std::optional<std::string> PercentDecode(std::string_view s, bool plus_is_space = true);
// Percent-encodes everything except unreserved characters (RFC 3986).
std::string PercentEncode(std::string_view s);

}  // namespace warren::base
