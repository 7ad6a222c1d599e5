#include "base/time_format.h"

#include <fmt/format.h>

#include <ctime>

#include "base/strings.h"

namespace warren::base {
namespace {

struct Split {
  std::tm tm;
  int64_t nanos;
};

Split ToUtc(WallTime t) {
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
  int64_t secs = ns / 1'000'000'000;
  int64_t frac = ns % 1'000'000'000;
  if (frac < 0) {
    frac += 1'000'000'000;
    secs -= 1;
  }
  std::time_t tt = static_cast<std::time_t>(secs);
  Split s{};
  gmtime_r(&tt, &s.tm);
  s.nanos = frac;
  return s;
}

std::string DatePart(const std::tm& tm) {
  return fmt::format("{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

// Days since 1970-01-01 for a proleptic Gregorian date (Howard Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

bool Digits(std::string_view s, size_t pos, size_t n, int* out) {
  if (pos + n > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string FormatRfc3339(WallTime t) { return DatePart(ToUtc(t).tm) + "Z"; }

std::string FormatRfc3339Nanos(WallTime t) {
  auto s = ToUtc(t);
  return fmt::format("{}.{:09d}Z", DatePart(s.tm), s.nanos);
}

std::string FormatRfc3339Millis(WallTime t) {
  auto s = ToUtc(t);
  return fmt::format("{}.{:03d}Z", DatePart(s.tm), s.nanos / 1'000'000);
}

std::optional<WallTime> ParseRfc3339(std::string_view s) {
  int y, mo, d, h, mi, se;
  if (!Digits(s, 0, 4, &y) || s.size() < 20 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d) || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
      !Digits(s, 11, 2, &h) || s[13] != ':' || !Digits(s, 14, 2, &mi) || s[16] != ':' ||
      !Digits(s, 17, 2, &se)) {
    return std::nullopt;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 60) return std::nullopt;
  size_t pos = 19;
  int64_t nanos = 0;
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    size_t digits = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
      if (digits < 9) nanos = nanos * 10 + (s[pos] - '0');
      ++digits;
      ++pos;
    }
    if (digits == 0) return std::nullopt;
    for (size_t i = digits; i < 9; ++i) nanos *= 10;
  }
  int64_t offset_secs = 0;
  if (pos >= s.size()) return std::nullopt;
  if (s[pos] == 'Z' || s[pos] == 'z') {
    ++pos;
  } else if (s[pos] == '+' || s[pos] == '-') {
    int oh, om;
    if (!Digits(s, pos + 1, 2, &oh) || pos + 3 >= s.size() || s[pos + 3] != ':' ||
        !Digits(s, pos + 4, 2, &om)) {
      return std::nullopt;
    }
    offset_secs = (oh * 3600 + om * 60) * (s[pos] == '+' ? 1 : -1);
    pos += 6;
  } else {
    return std::nullopt;
  }
  if (pos != s.size()) return std::nullopt;
  int64_t days = DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d));
  int64_t secs = days * 86400 + h * 3600 + mi * 60 + se - offset_secs;
  auto dur = std::chrono::seconds(secs) + std::chrono::nanoseconds(nanos);
  return WallTime(std::chrono::duration_cast<WallTime::duration>(dur));
}

std::optional<std::chrono::nanoseconds> ParseDuration(std::string_view s) {
  if (s.empty()) return std::nullopt;
  bool negative = false;
  if (s[0] == '-' || s[0] == '+') {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s == "0") return std::chrono::nanoseconds(0);
  long double total = 0;
  bool any = false;
  while (!s.empty()) {
    size_t i = 0;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == '.')) ++i;
    if (i == 0) return std::nullopt;
    std::string number(s.substr(0, i));
    char* end = nullptr;
    long double v = std::strtold(number.c_str(), &end);
    if (end != number.c_str() + number.size()) return std::nullopt;
    s.remove_prefix(i);
    size_t j = 0;
    while (j < s.size() && !((s[j] >= '0' && s[j] <= '9') || s[j] == '.')) ++j;
    std::string_view unit = s.substr(0, j);
    s.remove_prefix(j);
    long double scale;
    if (unit == "ns")
      scale = 1;
    else if (unit == "us" || unit == "µs")
      scale = 1e3;
    else if (unit == "ms")
      scale = 1e6;
    else if (unit == "s")
      scale = 1e9;
    else if (unit == "m")
      scale = 60e9;
    else if (unit == "h")
      scale = 3600e9;
    else if (unit == "d")
      scale = 86400e9;
    else
      return std::nullopt;
    total += v * scale;
    any = true;
  }
  if (!any || total > 9.2e18L) return std::nullopt;
  auto ns = std::chrono::nanoseconds(static_cast<int64_t>(total));
  return negative ? -ns : ns;
}

}  // namespace warren::base
