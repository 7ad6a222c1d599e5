#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/civil_time.h"
#include "base/posix_tz.h"
#include "base/result.h"

namespace warren::base {

inline constexpr std::string_view kZoneInfoDir = "/usr/share/zoneinfo";

// An IANA time zone read from a TZif file (RFC 8536: v1 32-bit data, v2+ 64-bit data, and the
// POSIX TZ footer for times after the last transition). GCC 12's libstdc++ has no chrono tzdb,
// and localtime/setenv("TZ") are process-global, so zones are read and applied here.
//
// A value type: copies share one immutable table (shared_ptr<const>, shared by every copy of
// this zone), so a TimeZone is cheap to copy and safe to use from any thread. Leap-second
// records ("right/" zones) are ignored, as Go does.
class TimeZone {
 public:
  static TimeZone Utc();

  // "" and "UTC" are UTC without reading a file; any other name is read from
  // `<zoneinfo_dir>/<name>`. "Local", absolute names and names with ".." are refused. Errors are
  // InvalidArgument and say which zone and why ("unknown time zone \"Mars/Base\"").
  static Result<TimeZone> Load(std::string_view name, std::string_view zoneinfo_dir = kZoneInfoDir);

  // Parses TZif bytes; `name` is only for messages and name().
  static Result<TimeZone> FromTzif(std::string_view name, std::string_view data);

  const std::string& name() const;

  // The period (offset and bounds) containing a Unix time.
  ZonePeriod Lookup(int64_t unix_seconds) const;

  // Wall-clock fields at a Unix time.
  CivilTime ToCivil(int64_t unix_seconds) const;

  // The Unix time of a wall-clock time, following Go's time.Date (fields may carry over). A
  // time in a spring-forward gap or a fall-back overlap is not an error: it is read with the
  // offset of the period found by looking the wall-clock value up as if it were UTC, then
  // corrected once when that offset does not hold there — the same answer Go gives.
  int64_t FromCivil(const CivilTime& c) const;

  struct Data;

 private:
  explicit TimeZone(std::shared_ptr<const Data> data) : data_(std::move(data)) {}
  std::shared_ptr<const Data> data_;
};

}  // namespace warren::base
