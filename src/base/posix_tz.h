#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>

#include "base/result.h"

namespace warren::base {

// One stretch of time with a single UTC offset: [start, end) in Unix seconds. The bounds are
// what Go's time.Date needs to place a wall-clock time next to a transition.
struct ZonePeriod {
  static constexpr int64_t kMin = std::numeric_limits<int64_t>::min() / 4;
  static constexpr int64_t kMax = std::numeric_limits<int64_t>::max() / 4;
  int32_t utc_offset = 0;  // seconds east of UTC
  bool is_dst = false;
  int64_t start = kMin;
  int64_t end = kMax;
};

// A POSIX TZ rule as found in the footer of a TZif v2+ file (RFC 8536 §3.3, with the v3
// extensions: rule times from -167 to 167 hours): "CET-1CEST,M3.5.0,M10.5.0/3", "<-03>3",
// "EST5EDT,M3.2.0,M11.1.0". It gives the offset for times after the file's last transition, so
// DST keeps working for years beyond the table. Plain value type.
class PosixTz {
 public:
  // Parses a rule; an error names the part that did not parse. A DST name with no rule gets
  // the US rule ",M3.2.0,M11.1.0", as tzcode and Go do.
  static Result<PosixTz> Parse(std::string_view rule);

  // The period containing `unix_seconds`.
  ZonePeriod Lookup(int64_t unix_seconds) const;

  bool has_dst() const { return dst_.has_value(); }

  // A date rule: Jn (1..365, February 29 never counted), n (0..365), or Mm.w.d.
  struct Date {
    enum class Kind { kJulian1, kJulian0, kMonthWeekDay };
    Kind kind = Kind::kMonthWeekDay;
    int day = 0;  // Jn / n: the day number; Mm.w.d: d (0 = Sunday)
    int month = 0;
    int week = 0;
  };
  struct Transition {
    Date date;
    int32_t time = 2 * 3600;  // local seconds after midnight, may be negative or > 24h
  };
  struct Dst {
    int32_t utc_offset = 0;
    Transition start;  // in standard time
    Transition end;    // in daylight time
  };

 private:
  int32_t std_offset_ = 0;
  std::optional<Dst> dst_;
};

}  // namespace warren::base
