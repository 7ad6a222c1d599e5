#include "base/posix_tz.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>

#include "base/civil_time.h"

namespace warren::base {
namespace {

// A cursor over the rule text; each Parse* consumes what it recognises.
struct Cursor {
  std::string_view s;
  bool Eat(char c) {
    if (s.empty() || s.front() != c) return false;
    s.remove_prefix(1);
    return true;
  }
  bool AtDigit() const { return !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])); }
};

Status Bad(std::string_view rule, std::string_view what) {
  return InvalidArgumentError(fmt::format("POSIX TZ rule \"{}\": {}", rule, what));
}

// A zone abbreviation: three or more letters, or anything in <...> ("<+0330>").
bool ParseName(Cursor& c) {
  if (c.Eat('<')) {
    size_t close = c.s.find('>');
    if (close == std::string_view::npos || close == 0) return false;
    c.s.remove_prefix(close + 1);
    return true;
  }
  size_t n = 0;
  while (n < c.s.size() && std::isalpha(static_cast<unsigned char>(c.s[n]))) ++n;
  if (n < 3) return false;
  c.s.remove_prefix(n);
  return true;
}

std::optional<int> ParseNumber(Cursor& c, int max) {
  if (!c.AtDigit()) return std::nullopt;
  int v = 0;
  while (c.AtDigit()) {
    v = v * 10 + (c.s[0] - '0');
    if (v > max) return std::nullopt;
    c.s.remove_prefix(1);
  }
  return v;
}

// [+-]hh[:mm[:ss]] in seconds; `max_hours` is 24 for offsets and 167 for rule times.
std::optional<int32_t> ParseClock(Cursor& c, int max_hours) {
  int sign = 1;
  if (c.Eat('-')) {
    sign = -1;
  } else {
    c.Eat('+');
  }
  auto h = ParseNumber(c, max_hours);
  if (!h) return std::nullopt;
  int32_t total = *h * 3600;
  for (int unit : {60, 1}) {
    if (!c.Eat(':')) break;
    auto part = ParseNumber(c, 59);
    if (!part) return std::nullopt;
    total += *part * unit;
  }
  return sign * total;
}

std::optional<PosixTz::Transition> ParseTransition(Cursor& c) {
  PosixTz::Transition t;
  if (c.Eat('M')) {
    t.date.kind = PosixTz::Date::Kind::kMonthWeekDay;
    auto m = ParseNumber(c, 12);
    if (!m || *m < 1 || !c.Eat('.')) return std::nullopt;
    auto w = ParseNumber(c, 5);
    if (!w || *w < 1 || !c.Eat('.')) return std::nullopt;
    auto d = ParseNumber(c, 6);
    if (!d) return std::nullopt;
    t.date.month = *m;
    t.date.week = *w;
    t.date.day = *d;
  } else if (c.Eat('J')) {
    t.date.kind = PosixTz::Date::Kind::kJulian1;
    auto n = ParseNumber(c, 365);
    if (!n || *n < 1) return std::nullopt;
    t.date.day = *n;
  } else {
    t.date.kind = PosixTz::Date::Kind::kJulian0;
    auto n = ParseNumber(c, 365);
    if (!n) return std::nullopt;
    t.date.day = *n;
  }
  if (c.Eat('/')) {
    auto time = ParseClock(c, 167);
    if (!time) return std::nullopt;
    t.time = *time;
  }
  return t;
}

// Days since 1970-01-01 of the rule's date in `year`.
int64_t RuleDay(int64_t year, const PosixTz::Date& d) {
  int64_t jan1 = DaysFromCivil(year, 1, 1);
  switch (d.kind) {
    case PosixTz::Date::Kind::kJulian1:
      return jan1 + d.day - 1 + (IsLeapYear(year) && d.day >= 60 ? 1 : 0);
    case PosixTz::Date::Kind::kJulian0:
      return jan1 + d.day;
    case PosixTz::Date::Kind::kMonthWeekDay:
      break;
  }
  int64_t first = DaysFromCivil(year, d.month, 1);
  int64_t first_weekday = FloorMod(first + 4, 7);
  int64_t day = 1 + FloorMod(d.day - first_weekday, 7) + int64_t{d.week - 1} * 7;
  while (day > DaysInMonth(year, d.month)) day -= 7;  // week 5 means "the last"
  return first + day - 1;
}

int64_t RuleInstant(int64_t year, const PosixTz::Transition& t, int32_t offset_in_force) {
  return RuleDay(year, t.date) * 86400 + t.time - offset_in_force;
}

}  // namespace

Result<PosixTz> PosixTz::Parse(std::string_view rule) {
  Cursor c{rule};
  PosixTz tz;
  if (!ParseName(c)) return Bad(rule, "expected a standard time name");
  auto std_west = ParseClock(c, 24);
  if (!std_west) return Bad(rule, "expected a standard time offset");
  tz.std_offset_ = -*std_west;  // POSIX counts hours west of UTC
  if (c.s.empty()) return tz;
  if (!ParseName(c)) return Bad(rule, "expected a daylight time name");
  Dst dst;
  dst.utc_offset = tz.std_offset_ + 3600;
  if (!c.s.empty() && c.s.front() != ',') {
    auto dst_west = ParseClock(c, 24);
    if (!dst_west) return Bad(rule, "expected a daylight time offset");
    dst.utc_offset = -*dst_west;
  }
  if (c.s.empty()) {
    dst.start = {{Date::Kind::kMonthWeekDay, 0, 3, 2}, 2 * 3600};
    dst.end = {{Date::Kind::kMonthWeekDay, 0, 11, 1}, 2 * 3600};
  } else {
    if (!c.Eat(',')) return Bad(rule, "expected ',' before the daylight time start");
    auto start = ParseTransition(c);
    if (!start) return Bad(rule, "bad daylight time start");
    if (!c.Eat(',')) return Bad(rule, "expected ',' before the daylight time end");
    auto end = ParseTransition(c);
    if (!end) return Bad(rule, "bad daylight time end");
    if (!c.s.empty()) return Bad(rule, fmt::format("unexpected \"{}\" at the end", c.s));
    dst.start = *start;
    dst.end = *end;
  }
  tz.dst_ = dst;
  return tz;
}

ZonePeriod PosixTz::Lookup(int64_t unix_seconds) const {
  if (!dst_) return {std_offset_, false, ZonePeriod::kMin, ZonePeriod::kMax};
  // The transitions of the year around `unix_seconds` and of its neighbours, so that a period
  // spanning New Year (southern hemisphere DST) has both of its ends.
  struct Event {
    int64_t at;
    bool to_dst;
  };
  std::array<Event, 6> events;
  int64_t year = CivilFromSeconds(unix_seconds + std_offset_).year;
  size_t n = 0;
  for (int64_t y = year - 1; y <= year + 1; ++y) {
    events[n++] = {RuleInstant(y, dst_->end, dst_->utc_offset), false};
    events[n++] = {RuleInstant(y, dst_->start, std_offset_), true};
  }
  // On a tie the DST start sorts last, so a rule that keeps DST all year ("EST5EDT,0/0,J365/25")
  // never shows a zero-length standard period.
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    return a.at != b.at ? a.at < b.at : (!a.to_dst && b.to_dst);
  });
  ZonePeriod p{events[0].to_dst ? std_offset_ : dst_->utc_offset, !events[0].to_dst,
               ZonePeriod::kMin, events[0].at};
  for (size_t i = 0; i < events.size() && events[i].at <= unix_seconds; ++i) {
    p.is_dst = events[i].to_dst;
    p.utc_offset = p.is_dst ? dst_->utc_offset : std_offset_;
    p.start = events[i].at;
    p.end = ZonePeriod::kMax;
    for (size_t j = i + 1; j < events.size(); ++j) {
      if (events[j].at > events[i].at) {
        p.end = events[j].at;
        break;
      }
    }
  }
  return p;
}

}  // namespace warren::base
