#include "base/time_zone.h"

#include <gtest/gtest.h>

#include "base/posix_tz.h"
#include "base/small_file.h"
#include "base/time_format.h"

namespace warren::base {
namespace {

int64_t Unix(std::string_view rfc3339) {
  auto t = ParseRfc3339(rfc3339);
  EXPECT_TRUE(t.has_value()) << rfc3339;
  return std::chrono::duration_cast<std::chrono::seconds>(t.value_or(WallTime{}).time_since_epoch())
      .count();
}

TEST(CivilTimeTest, RoundTripsAndWeekdays) {
  for (int64_t s : {int64_t{0}, int64_t{951782400} /* 2000-02-29 */, int64_t{-86400},
                    int64_t{4102444800} /* 2100-01-01 */}) {
    EXPECT_EQ(SecondsFromCivil(CivilFromSeconds(s)), s);
  }
  CivilTime c = CivilFromSeconds(Unix("2024-02-29T13:14:15Z"));
  EXPECT_EQ(c.year, 2024);
  EXPECT_EQ(c.month, 2);
  EXPECT_EQ(c.day, 29);
  EXPECT_EQ(c.hour, 13);
  EXPECT_EQ(c.weekday, 4);  // a Thursday
  // Fields carry over as Go's time.Date does.
  EXPECT_EQ(DaysFromCivil(2023, 13, 1), DaysFromCivil(2024, 1, 1));
  EXPECT_EQ(DaysFromCivil(2024, 3, 0), DaysFromCivil(2024, 2, 29));
  EXPECT_EQ(DaysInMonth(2100, 2), 28);
  EXPECT_EQ(DaysInMonth(2000, 2), 29);
}

TEST(PosixTzTest, FixedOffsets) {
  auto tz = PosixTz::Parse("<-03>3");
  ASSERT_TRUE(tz.ok()) << tz.status();
  EXPECT_FALSE(tz->has_dst());
  EXPECT_EQ(tz->Lookup(0).utc_offset, -3 * 3600);
  auto india = PosixTz::Parse("IST-5:30");
  ASSERT_TRUE(india.ok());
  EXPECT_EQ(india->Lookup(0).utc_offset, 5 * 3600 + 1800);
}

TEST(PosixTzTest, NorthernAndSouthernRules) {
  auto cet = PosixTz::Parse("CET-1CEST,M3.5.0,M10.5.0/3");
  ASSERT_TRUE(cet.ok()) << cet.status();
  // 2100-03-28 is the last Sunday of March 2100; the change is at 01:00 UTC.
  ZonePeriod summer = cet->Lookup(Unix("2100-03-28T01:00:00Z"));
  EXPECT_EQ(summer.utc_offset, 7200);
  EXPECT_TRUE(summer.is_dst);
  EXPECT_EQ(summer.start, Unix("2100-03-28T01:00:00Z"));
  EXPECT_EQ(summer.end, Unix("2100-10-31T01:00:00Z"));
  EXPECT_EQ(cet->Lookup(Unix("2100-03-28T00:59:59Z")).utc_offset, 3600);

  // Sydney: DST from the first Sunday of October to the first Sunday of April, across New Year.
  auto syd = PosixTz::Parse("AEST-10AEDT,M10.1.0,M4.1.0/3");
  ASSERT_TRUE(syd.ok());
  ZonePeriod jan = syd->Lookup(Unix("2100-01-15T00:00:00Z"));
  EXPECT_EQ(jan.utc_offset, 11 * 3600);
  EXPECT_EQ(jan.start, Unix("2099-10-03T16:00:00Z"));  // 02:00 AEST on 2099-10-04
  EXPECT_EQ(syd->Lookup(Unix("2100-07-01T00:00:00Z")).utc_offset, 10 * 3600);

  // Israel's v3 rule: the start is at 26:00 on the Thursday before the last Friday.
  auto il = PosixTz::Parse("IST-2IDT,M3.4.4/26,M10.5.0");
  ASSERT_TRUE(il.ok()) << il.status();
  EXPECT_EQ(il->Lookup(Unix("2100-06-01T00:00:00Z")).utc_offset, 3 * 3600);

  // A DST name without a rule gets the US rule.
  auto us = PosixTz::Parse("EST5EDT");
  ASSERT_TRUE(us.ok());
  EXPECT_EQ(us->Lookup(Unix("2100-07-01T00:00:00Z")).utc_offset, -4 * 3600);
  EXPECT_EQ(us->Lookup(Unix("2100-01-01T00:00:00Z")).utc_offset, -5 * 3600);
}

TEST(PosixTzTest, RejectsMalformedRules) {
  for (const char* bad : {"", "X5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.2.0",
                          "EST5EDT,M3.2.0,M11.1.0junk", "<EST5", "EST99"}) {
    EXPECT_FALSE(PosixTz::Parse(bad).ok()) << bad;
  }
}

TEST(TimeZoneTest, LoadsSystemZonesAndUsesTheFooterAfterTheTable) {
  auto berlin = TimeZone::Load("Europe/Berlin");
  ASSERT_TRUE(berlin.ok()) << berlin.status();
  EXPECT_EQ(berlin->name(), "Europe/Berlin");
  EXPECT_EQ(berlin->Lookup(Unix("2024-01-15T00:00:00Z")).utc_offset, 3600);
  EXPECT_EQ(berlin->Lookup(Unix("2024-07-15T00:00:00Z")).utc_offset, 7200);
  EXPECT_EQ(berlin->Lookup(Unix("2024-03-31T01:00:00Z")).start, Unix("2024-03-31T01:00:00Z"));
  EXPECT_EQ(berlin->Lookup(Unix("2200-07-15T00:00:00Z")).utc_offset, 7200);
  EXPECT_EQ(berlin->Lookup(Unix("2200-12-15T00:00:00Z")).utc_offset, 3600);
  // History: Berlin kept double summer time (+3) in the summer of 1945.
  EXPECT_EQ(berlin->Lookup(Unix("1945-06-15T00:00:00Z")).utc_offset, 3 * 3600);
  auto utc = TimeZone::Load("");
  ASSERT_TRUE(utc.ok());
  EXPECT_EQ(utc->Lookup(0).utc_offset, 0);
}

TEST(TimeZoneTest, FromCivilFollowsGoInGapsAndOverlaps) {
  auto ny = TimeZone::Load("America/New_York");
  ASSERT_TRUE(ny.ok());
  // A time in the spring gap is read with the offset of after it (EDT), which lands at 01:30
  // EST: what Go's time.Date(2012, 3, 11, 2, 30, ...) gives in America/New_York.
  EXPECT_EQ(ny->FromCivil({2012, 3, 11, 2, 30, 0}), Unix("2012-03-11T06:30:00Z"));
  // A time in the fall overlap is the first (EDT) one for a zone west of UTC.
  EXPECT_EQ(ny->FromCivil({2012, 11, 4, 1, 30, 0}), Unix("2012-11-04T05:30:00Z"));
  auto berlin = TimeZone::Load("Europe/Berlin");
  ASSERT_TRUE(berlin.ok());
  // ... and the second (CET) one for a zone east of UTC, as Go's time.Date gives.
  EXPECT_EQ(berlin->FromCivil({2024, 10, 27, 2, 30, 0}), Unix("2024-10-27T01:30:00Z"));
  CivilTime c = berlin->ToCivil(Unix("2024-07-01T10:00:00Z"));
  EXPECT_EQ(c.hour, 12);
}

TEST(TimeZoneTest, ReadsVersionOneData) {
  auto bytes = ReadSmallFile(std::string(kZoneInfoDir) + "/Europe/Berlin");
  ASSERT_TRUE(bytes.ok());
  // Keep only the v1 header and block and mark it version 1.
  auto count = [&](size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v = (v << 8) | static_cast<uint8_t>((*bytes)[at + i]);
    return v;
  };
  uint32_t isut = count(20), isstd = count(24), leap = count(28), time = count(32),
           type = count(36), chars = count(40);
  size_t v1 = 44 + time * 5 + type * 6 + chars + leap * 8 + isstd + isut;
  std::string data = bytes->substr(0, v1);
  data[4] = '\0';
  auto tz = TimeZone::FromTzif("v1", data);
  ASSERT_TRUE(tz.ok()) << tz.status();
  EXPECT_EQ(tz->Lookup(Unix("2024-07-15T00:00:00Z")).utc_offset, 7200);
  EXPECT_EQ(tz->Lookup(Unix("2024-12-15T00:00:00Z")).utc_offset, 3600);
}

TEST(TimeZoneTest, RejectsDamagedData) {
  auto bytes = ReadSmallFile(std::string(kZoneInfoDir) + "/America/New_York");
  ASSERT_TRUE(bytes.ok());
  EXPECT_FALSE(TimeZone::FromTzif("x", "not a zone file").ok());
  EXPECT_FALSE(TimeZone::FromTzif("x", bytes->substr(0, 100)).ok());
  EXPECT_FALSE(TimeZone::FromTzif("x", bytes->substr(0, bytes->size() - 1)).ok());
  auto unknown = TimeZone::Load("Nowhere/Atlantis");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("unknown time zone \"Nowhere/Atlantis\""),
            std::string::npos);
}

}  // namespace
}  // namespace warren::base
