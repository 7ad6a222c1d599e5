// libFuzzer target for the cron and time zone parsers: a schedule comes from a manifest and a
// zone file from disk, so any bytes must parse or be refused, and a parsed schedule's Next must
// return a time strictly after its input (or nothing) without looping. The first input byte
// picks the parser. A crash, a sanitizer report or a broken invariant (trap) is a bug.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "base/cron_schedule.h"
#include "base/posix_tz.h"
#include "base/time_zone.h"

using namespace warren;

namespace {

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view input(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: {
      auto s = base::CronSchedule::Parse(input);
      if (!s.ok()) return 0;
      base::WallTime t(std::chrono::seconds(1'800'000'000));
      for (int i = 0; i < 3; ++i) {
        auto next = s->Next(t);
        if (!next) break;
        Check(*next > t);
        t = *next;
      }
      return 0;
    }
    case 1: {
      auto tz = base::PosixTz::Parse(input);
      if (tz.ok()) {
        auto p = tz->Lookup(1'800'000'000);
        Check(p.start <= 1'800'000'000 && 1'800'000'000 < p.end);
      }
      return 0;
    }
    default: {
      auto tz = base::TimeZone::FromTzif("fuzz", input);
      if (tz.ok()) {
        for (int64_t t : {int64_t{-1'000'000'000}, int64_t{0}, int64_t{4'000'000'000}}) {
          auto p = tz->Lookup(t);
          Check(p.start <= t && t < p.end);
        }
      }
      return 0;
    }
  }
}
