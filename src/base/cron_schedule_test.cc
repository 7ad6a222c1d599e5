#include "base/cron_schedule.h"

#include <gtest/gtest.h>

#include <string>

#include "base/time_format.h"

namespace warren::base {
namespace {

WallTime At(std::string_view rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return t.value_or(WallTime{});
}

std::string NextOf(std::string_view spec, std::string_view after, std::string_view zone = {}) {
  auto s = CronSchedule::Parse(spec, zone);
  if (!s.ok()) return "parse error: " + s.status().ToString();
  auto next = s->Next(At(after));
  return next ? FormatRfc3339(*next) : "never";
}

struct Case {
  const char* spec;
  const char* after;
  const char* want;  // UTC
};

// The cases of robfig/cron's TestNext, with its seconds field dropped, read in UTC.
TEST(CronScheduleTest, MatchesRobfigNextCases) {
  const Case cases[] = {
      {"0/15 * * * *", "2012-07-09T14:45:00Z", "2012-07-09T15:00:00Z"},
      {"0/15 * * * *", "2012-07-09T14:59:00Z", "2012-07-09T15:00:00Z"},
      {"0/15 * * * *", "2012-07-09T14:59:59Z", "2012-07-09T15:00:00Z"},
      {"20-35/15 * * * *", "2012-07-09T15:45:00Z", "2012-07-09T16:20:00Z"},
      {"*/15 * * * *", "2012-07-09T23:46:00Z", "2012-07-10T00:00:00Z"},
      {"20-35/15 * * * *", "2012-07-09T23:45:00Z", "2012-07-10T00:20:00Z"},
      {"20-35/15 1/2 * * *", "2012-07-09T23:35:51Z", "2012-07-10T01:20:00Z"},
      {"20-35/15 10-12 * * *", "2012-07-09T23:35:51Z", "2012-07-10T10:20:00Z"},
      {"20-35/15 1/2 */2 * *", "2012-07-09T23:35:51Z", "2012-07-11T01:20:00Z"},
      {"20-35/15 * 9-20 * *", "2012-07-09T23:35:51Z", "2012-07-10T00:20:00Z"},
      {"20-35/15 * 9-20 Jul *", "2012-07-09T23:35:51Z", "2012-07-10T00:20:00Z"},
      {"0 0 9 Apr-Oct ?", "2012-07-09T23:35:00Z", "2012-08-09T00:00:00Z"},
      {"0 0 */5 Apr,Aug,Oct Mon", "2012-07-09T23:35:00Z", "2012-08-01T00:00:00Z"},
      {"0 0 */5 Oct Mon", "2012-07-09T23:35:00Z", "2012-10-01T00:00:00Z"},
      {"0 0 * Feb Mon", "2012-07-09T23:35:00Z", "2013-02-04T00:00:00Z"},
      {"0 0 * Feb Mon/2", "2012-07-09T23:35:00Z", "2013-02-01T00:00:00Z"},
      {"* * * * *", "2012-12-31T23:59:45Z", "2013-01-01T00:00:00Z"},
      {"0 0 29 Feb ?", "2012-07-09T23:35:00Z", "2016-02-29T00:00:00Z"},
      {"0 0 30 Feb ?", "2012-07-09T23:35:00Z", "never"},
      {"0 0 31 Apr ?", "2012-07-09T23:35:00Z", "never"},
  };
  for (const Case& c : cases)
    EXPECT_EQ(NextOf(c.spec, c.after), c.want) << c.spec << " after " << c.after;
}

TEST(CronScheduleTest, NextIsStrictlyAfter) {
  EXPECT_EQ(NextOf("* * * * *", "2026-01-01T12:00:00Z"), "2026-01-01T12:01:00Z");
  EXPECT_EQ(NextOf("* * * * *", "2026-01-01T11:59:59.999Z"), "2026-01-01T12:00:00Z");
  EXPECT_EQ(NextOf("0 12 * * *", "2026-01-01T12:00:00Z"), "2026-01-02T12:00:00Z");
}

TEST(CronScheduleTest, FebruaryTwentyNinthAndThirtyFirsts) {
  EXPECT_EQ(NextOf("0 0 29 2 *", "2024-03-01T00:00:00Z"), "2028-02-29T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 31 * *", "2024-01-31T00:00:00Z"), "2024-03-31T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 31 * *", "2024-05-31T00:00:00Z"), "2024-07-31T00:00:00Z");
}

TEST(CronScheduleTest, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // 2024-09-01 is a Sunday; the 6th and 20th are Fridays, the 13th is both.
  auto s = CronSchedule::Parse("0 0 13 * fri");
  ASSERT_TRUE(s.ok()) << s.status();
  WallTime t = At("2024-09-01T00:00:00Z");
  std::vector<std::string> got;
  for (int i = 0; i < 4; ++i) {
    t = s->Next(t).value();
    got.push_back(FormatRfc3339(t));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"2024-09-06T00:00:00Z", "2024-09-13T00:00:00Z",
                                           "2024-09-20T00:00:00Z", "2024-09-27T00:00:00Z"}));
  // A star in either field makes it an AND (the star matches every day).
  EXPECT_EQ(NextOf("0 0 13 * *", "2024-09-01T00:00:00Z"), "2024-09-13T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 * * fri", "2024-09-07T00:00:00Z"), "2024-09-13T00:00:00Z");
  EXPECT_EQ(NextOf("0 0 ? * FRI", "2024-09-07T00:00:00Z"), "2024-09-13T00:00:00Z");
}

TEST(CronScheduleTest, NamesAreCaseInsensitive) {
  EXPECT_EQ(NextOf("0 9 * JAN,jul MON-fri", "2026-02-01T00:00:00Z"), "2026-07-01T09:00:00Z");
}

TEST(CronScheduleTest, Descriptors) {
  const char* after = "2026-03-04T05:06:07Z";  // a Wednesday
  EXPECT_EQ(NextOf("@hourly", after), "2026-03-04T06:00:00Z");
  EXPECT_EQ(NextOf("@daily", after), "2026-03-05T00:00:00Z");
  EXPECT_EQ(NextOf("@midnight", after), "2026-03-05T00:00:00Z");
  EXPECT_EQ(NextOf("@weekly", after), "2026-03-08T00:00:00Z");
  EXPECT_EQ(NextOf("@monthly", after), "2026-04-01T00:00:00Z");
  EXPECT_EQ(NextOf("@yearly", after), "2027-01-01T00:00:00Z");
  EXPECT_EQ(NextOf("@annually", after), "2027-01-01T00:00:00Z");
}

TEST(CronScheduleTest, EveryIsADelayFromTheGivenSecond) {
  EXPECT_EQ(NextOf("@every 90s", "2026-01-01T12:00:00.5Z"), "2026-01-01T12:01:30Z");
  EXPECT_EQ(NextOf("@every 1h30m", "2026-01-01T12:00:10Z"), "2026-01-01T13:30:10Z");
  // robfig raises anything under a second to one second.
  EXPECT_EQ(NextOf("@every 10ms", "2026-01-01T12:00:00Z"), "2026-01-01T12:00:01Z");
  auto s = CronSchedule::Parse("@every 5m");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->is_every());
}

// America/New_York, spring forward on 2012-03-11 (02:00 EST → 03:00 EDT): robfig's cases.
TEST(CronScheduleTest, NewYorkSpringForwardSkipsTheMissingHour) {
  const char* ny = "America/New_York";
  EXPECT_EQ(NextOf("30 2 11 Mar ?", "2012-03-11T00:00:00-05:00", ny), "2013-03-11T06:30:00Z");
  EXPECT_EQ(NextOf("0 * * * ?", "2012-03-11T00:00:00-05:00", ny), "2012-03-11T06:00:00Z");
  EXPECT_EQ(NextOf("0 * * * ?", "2012-03-11T01:00:00-05:00", ny), "2012-03-11T07:00:00Z");
  EXPECT_EQ(NextOf("0 * * * ?", "2012-03-11T03:00:00-04:00", ny), "2012-03-11T08:00:00Z");
  EXPECT_EQ(NextOf("0 1 * * ?", "2012-03-11T01:00:00-05:00", ny), "2012-03-12T05:00:00Z");
  // 02:00 does not exist that day: the nightly job skips to the next day.
  EXPECT_EQ(NextOf("0 2 * * ?", "2012-03-11T00:00:00-05:00", ny), "2012-03-12T06:00:00Z");
}

// America/New_York, fall back on 2012-11-04 (02:00 EDT → 01:00 EST): 01:xx happens twice.
TEST(CronScheduleTest, NewYorkFallBackRepeatsTheDoubledHour) {
  const char* ny = "America/New_York";
  EXPECT_EQ(NextOf("30 2 04 Nov ?", "2012-11-04T00:00:00-04:00", ny), "2012-11-04T07:30:00Z");
  EXPECT_EQ(NextOf("30 1 04 Nov ?", "2012-11-04T01:45:00-04:00", ny), "2012-11-04T06:30:00Z");
  EXPECT_EQ(NextOf("0 * * * ?", "2012-11-04T01:00:00-04:00", ny), "2012-11-04T06:00:00Z");
  EXPECT_EQ(NextOf("0 * * * ?", "2012-11-04T01:00:00-05:00", ny), "2012-11-04T07:00:00Z");
  EXPECT_EQ(NextOf("0 1 * * ?", "2012-11-04T00:00:00-04:00", ny), "2012-11-04T05:00:00Z");
  EXPECT_EQ(NextOf("0 1 * * ?", "2012-11-04T01:00:00-04:00", ny), "2012-11-04T06:00:00Z");
  EXPECT_EQ(NextOf("0 1 * * ?", "2012-11-04T01:00:00-05:00", ny), "2012-11-05T06:00:00Z");
  EXPECT_EQ(NextOf("0 2 * * ?", "2012-11-04T00:00:00-04:00", ny), "2012-11-04T07:00:00Z");
  EXPECT_EQ(NextOf("0 3 3 * ?", "2012-11-04T00:00:00-04:00", ny), "2012-12-03T08:00:00Z");
}

TEST(CronScheduleTest, BerlinAcrossBothChanges) {
  const char* berlin = "Europe/Berlin";
  // 2024-03-31: 02:00 CET → 03:00 CEST, so 02:30 is skipped that day.
  EXPECT_EQ(NextOf("30 2 * * *", "2024-03-31T00:00:00+01:00", berlin), "2024-04-01T00:30:00Z");
  EXPECT_EQ(NextOf("0 9 * * *", "2024-03-30T12:00:00Z", berlin), "2024-03-31T07:00:00Z");
  // 2024-10-27: 03:00 CEST → 02:00 CET, so 02:30 fires twice.
  EXPECT_EQ(NextOf("30 2 * * *", "2024-10-27T00:00:00+02:00", berlin), "2024-10-27T00:30:00Z");
  EXPECT_EQ(NextOf("30 2 * * *", "2024-10-27T00:30:00Z", berlin), "2024-10-27T01:30:00Z");
  EXPECT_EQ(NextOf("30 2 * * *", "2024-10-27T01:30:00Z", berlin), "2024-10-28T01:30:00Z");
}

// robfig issue 157: a day whose midnight is skipped (Sao Paulo, 2018-11-04) starts at 01:00.
TEST(CronScheduleTest, SaoPauloMidnightGap) {
  const char* sp = "America/Sao_Paulo";
  EXPECT_EQ(NextOf("0 9 10 * ?", "2018-10-17T05:00:00-04:00", sp), "2018-11-10T11:00:00Z");
  EXPECT_EQ(NextOf("0 9 22 * ?", "2018-02-14T05:00:00-05:00", sp), "2018-02-22T12:00:00Z");
  EXPECT_EQ(NextOf("0 1 4 11 *", "2018-11-01T00:00:00Z", sp), "2018-11-04T03:00:00Z");
  // Midnight itself did not exist that day, so a midnight schedule skips to the next year.
  EXPECT_EQ(NextOf("0 0 4 11 *", "2018-11-01T00:00:00Z", sp), "2019-11-04T03:00:00Z");
}

// The zone files end their tables in 2037; later years come from the POSIX footer.
TEST(CronScheduleTest, DaylightSavingBeyondTheTransitionTable) {
  const char* ny = "America/New_York";
  // 2050-03-13 is the second Sunday of March: 02:30 is skipped.
  EXPECT_EQ(NextOf("30 2 * * *", "2050-03-13T00:00:00-05:00", ny), "2050-03-14T06:30:00Z");
  EXPECT_EQ(NextOf("0 12 * * *", "2050-07-01T00:00:00Z", ny), "2050-07-01T16:00:00Z");
  EXPECT_EQ(NextOf("0 12 * * *", "2050-12-01T00:00:00Z", ny), "2050-12-01T17:00:00Z");
  EXPECT_EQ(NextOf("0 12 27 3 *", "2050-01-01T00:00:00Z", "Europe/Berlin"), "2050-03-27T10:00:00Z");
  EXPECT_EQ(NextOf("0 12 26 3 *", "2050-01-01T00:00:00Z", "Europe/Berlin"), "2050-03-26T11:00:00Z");
}

TEST(CronScheduleTest, TimeZonePrefixes) {
  EXPECT_EQ(NextOf("TZ=Europe/Berlin 0 9 * * *", "2026-07-01T00:00:00Z"), "2026-07-01T07:00:00Z");
  EXPECT_EQ(NextOf("CRON_TZ=Asia/Kolkata 0 9 * * *", "2026-07-01T00:00:00Z"),
            "2026-07-01T03:30:00Z");
  EXPECT_EQ(NextOf("0 9 * * *", "2026-07-01T00:00:00Z", "UTC"), "2026-07-01T09:00:00Z");
  auto s = CronSchedule::Parse("0 9 * * *", "Europe/Berlin");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->time_zone().name(), "Europe/Berlin");
}

TEST(CronScheduleTest, ErrorsNameTheFieldAndValue) {
  struct Bad {
    const char* spec;
    const char* zone;
    const char* want;
  };
  const Bad cases[] = {
      {"", "", "is empty"},
      {"61 * * * *", "", "minute field \"61\": 61 is above the maximum 59"},
      {"* 24 * * *", "", "hour field \"24\""},
      {"* * 0 * *", "", "day-of-month field \"0\": 0 is below the minimum 1"},
      {"* * * 13 *", "", "month field \"13\""},
      {"* * * * 7", "", "day-of-week field \"7\""},
      {"* * * * xyz", "", "day-of-week field \"xyz\": \"xyz\" is not a number"},
      {"5-1 * * * *", "", "minute field \"5-1\": range start 5 is after its end 1"},
      {"*/0 * * * *", "", "minute field \"*/0\": step \"0\" is not a positive number"},
      {"1-2-3 * * * *", "", "too many hyphens"},
      {"1/2/3 * * * *", "", "too many slashes"},
      {"* * * *", "", "expected 5 fields"},
      {"0 0 * * * *", "", "expected 5 fields"},
      {"@fortnightly", "", "unknown descriptor \"@fortnightly\""},
      {"@every soon", "", "bad @every duration \"soon\""},
      {"TZ=Mars/Base 0 0 * * *", "", "unknown time zone \"Mars/Base\""},
      {"0 0 * * *", "../../etc/passwd", "invalid time zone name"},
      {"0 0 * * *", "/etc/localtime", "invalid time zone name"},
      {"0 0 * * *", "Local", "\"Local\" is not allowed"},
      {"0 0 * * *", "America", "unknown time zone \"America\""},
      {"TZ=Europe/Berlin", "", "no schedule after it"},
      {"TZ=Europe/Berlin 0 0 * * *", "Europe/Paris", "use one or the other"},
  };
  for (const Bad& c : cases) {
    auto s = CronSchedule::Parse(c.spec, c.zone);
    ASSERT_FALSE(s.ok()) << c.spec;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.spec;
    EXPECT_NE(s.status().message().find(c.want), std::string::npos)
        << c.spec << " gave: " << s.status().message();
    EXPECT_NE(s.status().message().find("cron schedule"), std::string::npos);
  }
}

TEST(CronScheduleTest, LastFiringIn) {
  auto daily = CronSchedule::Parse("0 8 * * *");
  ASSERT_TRUE(daily.ok());
  EXPECT_EQ(
      FormatRfc3339(*daily->LastFiringIn(At("2026-01-01T00:00:00Z"), At("2026-01-10T12:00:00Z"))),
      "2026-01-10T08:00:00Z");
  EXPECT_EQ(
      FormatRfc3339(*daily->LastFiringIn(At("2026-01-01T00:00:00Z"), At("2026-01-10T08:00:00Z"))),
      "2026-01-10T08:00:00Z");  // the end is inclusive
  EXPECT_FALSE(daily->LastFiringIn(At("2026-01-10T08:00:00Z"), At("2026-01-10T12:00:00Z")));
  // A minutely schedule over a long span still finds the latest firing.
  auto minutely = CronSchedule::Parse("* * * * *");
  ASSERT_TRUE(minutely.ok());
  EXPECT_EQ(FormatRfc3339(
                *minutely->LastFiringIn(At("2020-01-01T00:00:00Z"), At("2026-01-10T12:34:56Z"))),
            "2026-01-10T12:34:00Z");
  auto never = CronSchedule::Parse("0 0 30 2 *");
  ASSERT_TRUE(never.ok());
  EXPECT_FALSE(never->LastFiringIn(At("2020-01-01T00:00:00Z"), At("2026-01-01T00:00:00Z")));
}

}  // namespace
}  // namespace warren::base
