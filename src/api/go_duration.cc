#include "api/go_duration.h"

#include <fmt/format.h>

namespace warren::api {
namespace {

// "1.500000000" → "1.5": the integer part and, when non-zero, a trimmed fraction.
std::string WithFraction(int64_t whole, int64_t frac, int digits) {
  if (frac == 0) return std::to_string(whole);
  std::string f = fmt::format("{:0{}}", frac, digits);
  while (!f.empty() && f.back() == '0') f.pop_back();
  return fmt::format("{}.{}", whole, f);
}

}  // namespace

std::string FormatGoDuration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns == 0) return "0s";
  std::string sign;
  uint64_t u = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  if (ns < 0) sign = "-";
  if (u < 1000) return fmt::format("{}{}ns", sign, u);
  if (u < 1000000) return fmt::format("{}{}µs", sign, WithFraction(u / 1000, u % 1000, 3));
  if (u < 1000000000) {
    return fmt::format("{}{}ms", sign, WithFraction(u / 1000000, u % 1000000, 6));
  }
  uint64_t secs = u / 1000000000;
  uint64_t frac = u % 1000000000;
  uint64_t hours = secs / 3600;
  uint64_t minutes = secs / 60 % 60;
  std::string s = WithFraction(static_cast<int64_t>(secs % 60), static_cast<int64_t>(frac), 9);
  if (hours > 0) return fmt::format("{}{}h{}m{}s", sign, hours, minutes, s);
  if (secs >= 60) return fmt::format("{}{}m{}s", sign, minutes, s);
  return fmt::format("{}{}s", sign, s);
}

}  // namespace warren::api
