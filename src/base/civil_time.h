#pragma once

#include <cstdint>

namespace warren::base {

// A proleptic Gregorian date and time of day with no zone: what a wall clock shows. The time
// zone code counts "local seconds" (seconds since 1970-01-01T00:00 on that wall clock) and
// converts with these functions. Plain value type.
struct CivilTime {
  int64_t year = 1970;
  int month = 1;  // 1..12
  int day = 1;    // 1..31
  int hour = 0;
  int minute = 0;
  int second = 0;
  int weekday = 4;  // 0 = Sunday; filled in by CivilFromSeconds, ignored by SecondsFromCivil
};

// Days since 1970-01-01. Month and day may be out of range and carry over as Go's time.Date
// does: month 13 is January of the next year, day 0 the last day of the previous month.
int64_t DaysFromCivil(int64_t year, int64_t month, int64_t day);

// Seconds since 1970-01-01T00:00 of a civil time; every field may carry over (hour 24, ...).
int64_t SecondsFromCivil(const CivilTime& c);

// The civil time (and weekday) that many seconds after 1970-01-01T00:00.
CivilTime CivilFromSeconds(int64_t seconds);

bool IsLeapYear(int64_t year);
int DaysInMonth(int64_t year, int month);

// Floor division and modulo, for times before 1970.
constexpr int64_t FloorDiv(int64_t a, int64_t b) {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}
constexpr int64_t FloorMod(int64_t a, int64_t b) { return a - FloorDiv(a, b) * b; }

}  // namespace warren::base
