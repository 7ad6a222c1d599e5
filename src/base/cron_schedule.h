#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"
#include "base/time_zone.h"

namespace warren::base {

// A cron schedule with the semantics of robfig/cron v3 ParseStandard, which is what OpenKruise
// (AdvancedCronJob, PoolAutoscaler cronPolicies) and Kubernetes CronJobs accept:
//
// - five fields: minute (0-59) hour (0-23) day-of-month (1-31) month (1-12 or jan-dec)
//   day-of-week (0-6 or sun-sat; 7 is refused, as robfig does). Each field is a comma list of
//   `*`, `?` (the same as `*`), `n`, `a-b`, with an optional `/step`; `n/step` means from n to
//   the field's maximum. Names are case-insensitive.
// - day-of-month and day-of-week: when both are restricted (neither starts with `*` or `?`), a
//   day matches if EITHER matches ("0 0 13 * fri" fires on every 13th and every Friday). A
//   stepped star ("*/2") counts as restricted, as in robfig.
// - descriptors @yearly @annually @monthly @weekly @daily @midnight @hourly, and
//   `@every <duration>` (Go syntax, "1h30m"; under a second is raised to one second, fractions
//   of a second are dropped; it fires that long after the given time, truncated to the second).
// - an optional `TZ=<zone> ` or `CRON_TZ=<zone> ` prefix, or the `time_zone` argument (not both).
//   No zone means UTC (robfig would use the process's local zone; a server's zone is not a
//   thing a manifest should depend on).
//
// Daylight saving time, as robfig does it (the tests pin each case):
// - a wall-clock time skipped by a spring-forward gap does not fire that day ("30 2 * * *" in
//   America/New_York skips 2012-03-11 and fires 2012-03-12T02:30-04:00); hourly schedules just
//   go from 01:00 to 03:00.
// - a wall-clock time repeated by a fall-back overlap fires twice ("0 1 * * *" fires at
//   01:00-04:00 and again at 01:00-05:00 on 2012-11-04).
// - when a day begins in a gap (midnight skipped, America/Sao_Paulo 2018-11-04), it begins at
//   the first hour that exists.
//
// A value type, immutable after Parse, safe to share between threads.
class CronSchedule {
 public:
  // Errors are InvalidArgument and name the field and the value: `cron schedule "61 * * * *":
  // minute field "61": 61 is above the maximum 59`.
  static Result<CronSchedule> Parse(std::string_view spec, std::string_view time_zone = {},
                                    std::string_view zoneinfo_dir = kZoneInfoDir);

  // The first firing strictly after `after`, at a whole second. nullopt when the schedule has
  // no firing within five years of `after` ("0 0 30 2 *"), as robfig returns the zero time.
  std::optional<WallTime> Next(WallTime after) const;

  // The latest firing in (since, until], or nullopt. Walks at most `max_steps` firings (a
  // controller asks "did a window start since I last looked?"; a minutely schedule over a
  // long outage would otherwise walk for a long time) and returns the last one it reached.
  std::optional<WallTime> LastFiringIn(WallTime since, WallTime until, int max_steps = 1000) const;

  const TimeZone& time_zone() const { return zone_; }
  bool is_every() const { return every_.count() > 0; }

 private:
  explicit CronSchedule(TimeZone zone) : zone_(std::move(zone)) {}
  bool DayMatches(const CivilTime& c) const;

  TimeZone zone_;
  std::chrono::seconds every_{0};  // > 0 for @every
  // Bit n set when value n matches; kStar marks a field written as * or ?.
  uint64_t minute_ = 0, hour_ = 0, dom_ = 0, month_ = 0, dow_ = 0;
};

}  // namespace warren::base
