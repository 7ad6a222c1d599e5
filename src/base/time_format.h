#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace warren::base {

// RFC 3339 in UTC with a 'Z'. Kubernetes timestamps use whole seconds
// ("2026-12-02T11:41:17Z"); E2B and proto3 JSON accept fractions.
std::string FormatRfc3339(WallTime t);        // whole seconds
std::string FormatRfc3339Nanos(WallTime t);   // 9 fractional digits, trailing zeros kept
std::string FormatRfc3339Millis(WallTime t);  // 3 fractional digits
// Parses RFC 3339 with any number of fractional digits and a 'Z' or ±hh:mm offset.
std::optional<WallTime> ParseRfc3339(std::string_view s);

// Parses Go-style durations as Kubernetes fields use them ("30s", "1m", "1h30m", "500ms", "2d"
// is accepted as 48h). Negative values are allowed ("-1s").
std::optional<std::chrono::nanoseconds> ParseDuration(std::string_view s);

}  // namespace warren::base
