#include "base/cron_schedule.h"

#include <fmt/format.h>

#include <array>

#include "base/strings.h"
#include "base/time_format.h"

namespace warren::base {
namespace {

constexpr uint64_t kStar = uint64_t{1} << 63;

struct Bounds {
  const char* field;
  unsigned min;
  unsigned max;
  const std::array<const char*, 12>* names;  // names[i] is value min + i, or null
};

constexpr std::array<const char*, 12> kMonthNames = {"jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 12> kDowNames = {
    "sun", "mon", "tue", "wed", "thu", "fri", "sat", nullptr, nullptr, nullptr, nullptr, nullptr};
constexpr Bounds kMinute{"minute", 0, 59, nullptr};
constexpr Bounds kHour{"hour", 0, 23, nullptr};
constexpr Bounds kDom{"day-of-month", 1, 31, nullptr};
constexpr Bounds kMonth{"month", 1, 12, &kMonthNames};
constexpr Bounds kDow{"day-of-week", 0, 6, &kDowNames};

uint64_t Bits(unsigned lo, unsigned hi, unsigned step) {
  uint64_t bits = 0;
  for (unsigned i = lo; i <= hi; i += step) bits |= uint64_t{1} << i;
  return bits;
}

uint64_t All(const Bounds& b) { return Bits(b.min, b.max, 1) | kStar; }

// Parses one field; `what` is prefixed to errors by the caller.
class FieldParser {
 public:
  FieldParser(const Bounds& b, std::string_view field) : b_(b), field_(field) {}

  Result<uint64_t> Parse() const {
    uint64_t bits = 0;
    // robfig splits on ',' and drops empty pieces ("1,,2" is "1,2").
    for (std::string_view range : Split(field_, ',')) {
      if (range.empty()) continue;
      ASSIGN_OR_RETURN(uint64_t b, Range(range));
      bits |= b;
    }
    if (bits == 0) return Error("is empty");
    return bits;
  }

 private:
  Status Error(std::string_view why) const {
    return InvalidArgumentError(fmt::format("{} field \"{}\": {}", b_.field, field_, why));
  }

  Result<unsigned> Number(std::string_view s) const {
    if (b_.names != nullptr) {
      std::string lower = AsciiLower(s);
      for (size_t i = 0; i < b_.names->size(); ++i) {
        if ((*b_.names)[i] != nullptr && lower == (*b_.names)[i]) {
          return b_.min + static_cast<unsigned>(i);
        }
      }
    }
    auto v = ParseUint64(s);
    if (!v) return Error(fmt::format("\"{}\" is not a number", s));
    if (*v > 1000) return Error(fmt::format("{} is above the maximum {}", *v, b_.max));
    return static_cast<unsigned>(*v);
  }

  // number | number "-" number [ "/" number ] | "*" or "?" [ "/" number ] | number "/" number
  Result<uint64_t> Range(std::string_view expr) const {
    auto range_and_step = Split(expr, '/');
    if (range_and_step.size() > 2) return Error(fmt::format("too many slashes in \"{}\"", expr));
    auto low_high = Split(range_and_step[0], '-');
    if (low_high.size() > 2) return Error(fmt::format("too many hyphens in \"{}\"", expr));
    unsigned start = 0, end = 0, step = 1;
    uint64_t extra = 0;
    if (low_high[0] == "*" || low_high[0] == "?") {
      if (low_high.size() != 1) return Error(fmt::format("\"{}\" is not a range", expr));
      start = b_.min;
      end = b_.max;
      extra = kStar;
    } else {
      ASSIGN_OR_RETURN(start, Number(low_high[0]));
      end = start;
      if (low_high.size() == 2) {
        ASSIGN_OR_RETURN(end, Number(low_high[1]));
      }
    }
    if (range_and_step.size() == 2) {
      auto s = ParseUint64(range_and_step[1]);
      if (!s || *s == 0 || *s > 1000) {
        return Error(fmt::format("step \"{}\" is not a positive number", range_and_step[1]));
      }
      step = static_cast<unsigned>(*s);
      if (low_high.size() == 1) end = b_.max;  // "n/step" means n to the maximum
      if (step > 1) extra = 0;                 // "*/2" is a restriction, not a star
    }
    if (start < b_.min) return Error(fmt::format("{} is below the minimum {}", start, b_.min));
    if (end > b_.max) return Error(fmt::format("{} is above the maximum {}", end, b_.max));
    if (start > end) return Error(fmt::format("range start {} is after its end {}", start, end));
    return Bits(start, end, step) | extra;
  }

  const Bounds& b_;
  std::string_view field_;
};

bool Has(uint64_t bits, int value) { return (bits >> value) & 1; }

int64_t FloorSeconds(WallTime t) {
  return std::chrono::floor<std::chrono::seconds>(t.time_since_epoch()).count();
}

}  // namespace

Result<CronSchedule> CronSchedule::Parse(std::string_view spec, std::string_view time_zone,
                                         std::string_view zoneinfo_dir) {
  auto fail = [&](const Status& s) {
    return s.WithPrefix(fmt::format("cron schedule \"{}\"", spec));
  };
  std::string_view rest = TrimSpace(spec);
  if (rest.empty()) return fail(InvalidArgumentError("is empty"));
  std::string_view zone_name = time_zone;
  for (std::string_view prefix : {"TZ=", "CRON_TZ="}) {
    if (rest.substr(0, prefix.size()) != prefix) continue;
    if (!time_zone.empty()) {
      return fail(InvalidArgumentError(
          "has a TZ= prefix and a time zone is also given; use one or the other"));
    }
    rest.remove_prefix(prefix.size());
    size_t space = rest.find_first_of(" \t");
    if (space == std::string_view::npos) {
      return fail(InvalidArgumentError("has a TZ= prefix but no schedule after it"));
    }
    zone_name = rest.substr(0, space);
    rest = TrimSpace(rest.substr(space));
    break;
  }
  auto zone = TimeZone::Load(zone_name, zoneinfo_dir);
  if (!zone.ok()) return fail(zone.status());
  CronSchedule s(*zone);

  if (rest.front() == '@') {
    static constexpr std::string_view kEvery = "@every ";
    if (rest.substr(0, kEvery.size()) == kEvery) {
      std::string_view text = TrimSpace(rest.substr(kEvery.size()));
      auto d = ParseDuration(text);
      if (!d) return fail(InvalidArgumentError(fmt::format("bad @every duration \"{}\"", text)));
      // robfig: under a second becomes a second; sub-second parts are dropped.
      s.every_ = std::max(std::chrono::seconds(1), std::chrono::floor<std::chrono::seconds>(*d));
      return s;
    }
    s.minute_ = 1;
    s.hour_ = 1;
    s.dom_ = All(kDom);
    s.month_ = All(kMonth);
    s.dow_ = All(kDow);
    if (rest == "@yearly" || rest == "@annually") {
      s.dom_ = uint64_t{1} << 1;
      s.month_ = uint64_t{1} << 1;
    } else if (rest == "@monthly") {
      s.dom_ = uint64_t{1} << 1;
    } else if (rest == "@weekly") {
      s.dow_ = 1;
    } else if (rest == "@daily" || rest == "@midnight") {
    } else if (rest == "@hourly") {
      s.hour_ = All(kHour);
    } else {
      return fail(InvalidArgumentError(fmt::format("unknown descriptor \"{}\"", rest)));
    }
    return s;
  }

  std::vector<std::string_view> fields;
  for (std::string_view f : Split(rest, ' ')) {
    for (std::string_view g : Split(f, '\t')) {
      if (!g.empty()) fields.push_back(g);
    }
  }
  if (fields.size() != 5) {
    return fail(InvalidArgumentError(
        fmt::format("expected 5 fields (minute hour day-of-month month day-of-week), found {}",
                    fields.size())));
  }
  const std::array<const Bounds*, 5> bounds = {&kMinute, &kHour, &kDom, &kMonth, &kDow};
  std::array<uint64_t*, 5> out = {&s.minute_, &s.hour_, &s.dom_, &s.month_, &s.dow_};
  for (size_t i = 0; i < 5; ++i) {
    auto bits = FieldParser(*bounds[i], fields[i]).Parse();
    if (!bits.ok()) return fail(bits.status());
    *out[i] = *bits;
  }
  return s;
}

bool CronSchedule::DayMatches(const CivilTime& c) const {
  bool dom = Has(dom_, c.day);
  bool dow = Has(dow_, c.weekday);
  if ((dom_ & kStar) || (dow_ & kStar)) return dom && dow;
  return dom || dow;
}

// A port of robfig's SpecSchedule.Next: find the first month, day, hour, minute that match,
// resetting the smaller fields the first time a larger one moves and starting over when a field
// wraps. Arithmetic is robfig's too: months and days move on the wall clock (time.Date
// normalisation), hours and minutes move on the absolute clock, which is what gives the DST
// behaviour documented in the header.
std::optional<WallTime> CronSchedule::Next(WallTime after) const {
  int64_t t = FloorSeconds(after);
  if (is_every()) return WallTime(std::chrono::seconds(t + every_.count()));
  t += 1;
  const TimeZone& z = zone_;
  bool added = false;
  int64_t year_limit = z.ToCivil(t).year + 5;

  for (;;) {  // robfig's WRAP label
    CivilTime c = z.ToCivil(t);
    if (c.year > year_limit) return std::nullopt;
    bool wrapped = false;

    while (!Has(month_, c.month)) {
      if (!added) {
        added = true;
        t = z.FromCivil({c.year, c.month, 1, 0, 0, 0});
        c = z.ToCivil(t);
      }
      t = z.FromCivil({c.year, c.month + 1, c.day, c.hour, c.minute, c.second});
      c = z.ToCivil(t);
      if (c.month == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    while (!DayMatches(c)) {
      if (!added) {
        added = true;
        t = z.FromCivil({c.year, c.month, c.day, 0, 0, 0});
        c = z.ToCivil(t);
      }
      t = z.FromCivil({c.year, c.month, c.day + 1, c.hour, c.minute, c.second});
      c = z.ToCivil(t);
      // A day that starts in a DST gap (or overlap) does not start at 00:00; move to the hour
      // that is closest to midnight, as robfig does.
      if (c.hour != 0) {
        t += c.hour > 12 ? int64_t{24 - c.hour} * 3600 : -int64_t{c.hour} * 3600;
        c = z.ToCivil(t);
      }
      if (c.day == 1) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    while (!Has(hour_, c.hour)) {
      if (!added) {
        added = true;
        t = z.FromCivil({c.year, c.month, c.day, c.hour, 0, 0});
      }
      t += 3600;
      c = z.ToCivil(t);
      if (c.hour == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    while (!Has(minute_, c.minute)) {
      if (!added) {
        added = true;
        t -= FloorMod(t, 60);
      }
      t += 60;
      c = z.ToCivil(t);
      if (c.minute == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;

    // ParseStandard's seconds field is always 0.
    while (c.second != 0) {
      added = true;
      t += 1;
      c = z.ToCivil(t);
      if (c.second == 0) {
        wrapped = true;
        break;
      }
    }
    if (wrapped) continue;
    return WallTime(std::chrono::seconds(t));
  }
}

std::optional<WallTime> CronSchedule::LastFiringIn(WallTime since, WallTime until,
                                                   int max_steps) const {
  if (until <= since) return std::nullopt;
  // Walk forward from a start that moves back by doubling spans: a minutely schedule finds its
  // answer in the first hour, a yearly one after a few doublings, and no walk is longer than
  // the firings in its span (capped by max_steps).
  auto span = std::chrono::duration_cast<WallTime::duration>(std::chrono::hours(1));
  for (;;) {
    WallTime from = until - span > since ? until - span : since;
    std::optional<WallTime> last;
    WallTime cursor = from;
    for (int i = 0; i < max_steps; ++i) {
      auto next = Next(cursor);
      if (!next || *next > until) break;
      last = next;
      cursor = *next;
    }
    if (last || from == since) return last;
    span *= 2;
  }
}

}  // namespace warren::base
