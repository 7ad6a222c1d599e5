#include "node/stats_ring.h"

#include <gtest/gtest.h>

namespace warren::node {
namespace {

using namespace std::chrono_literals;

StatsSample At(int seconds, uint64_t cpu_ns) {
  StatsSample s;
  s.time = base::WallTime(std::chrono::seconds(1'800'000'000 + seconds));
  s.cpu_usage_ns = cpu_ns;
  s.cpu_count = 2;
  return s;
}

TEST(StatsRing, CpuPercentIsOverTheIntervalAndTheCpus) {
  StatsRing ring(10);
  ring.Add(At(0, 0));
  ring.Add(At(5, 5'000'000'000));  // one CPU busy for 5 s, of 2
  ASSERT_EQ(ring.size(), 2u);
  EXPECT_DOUBLE_EQ(ring.Latest()->cpu_used_pct, 50.0);
}

TEST(StatsRing, KeepsTheLastSamplesAndSelectsARange) {
  StatsRing ring(3);
  for (int i = 0; i < 5; ++i) ring.Add(At(i * 5, 0));
  auto all = ring.Range({}, {});
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all.front().time, At(10, 0).time);
  auto some = ring.Range(At(12, 0).time, At(20, 0).time);
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some.front().time, At(15, 0).time);
}

}  // namespace
}  // namespace warren::node
