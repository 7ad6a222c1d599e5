#include "cli/top_usage.h"

#include <gtest/gtest.h>

#include <sstream>

namespace warren::cli {
namespace {

using api::Json;

TEST(TopUsage, PrintsCoresMemoryAndDashesWithoutASample) {
  std::vector<SandboxUsage> rows;
  rows.push_back({"team", "idle", "iaaa", std::nullopt});
  UsageSample busy = ParseUsageSample(Json::parse(
      R"({"cpuCount": 2, "cpuUsedPct": 12.5, "memUsed": 47185920, "memTotal": 536870912,
          "diskUsed": 1048576, "diskTotal": 1073741824, "timestampUnix": 1})"));
  EXPECT_EQ(busy.MilliCores(), 250);
  rows.push_back({"team", "busy", "ibbb", busy});
  rows.push_back({"other", "new", "", std::nullopt});

  std::ostringstream out;
  UsageTable(rows, /*with_namespace=*/true).Print(out);
  EXPECT_EQ(out.str(),
            "NAMESPACE   NAME   SANDBOX-ID   CPU(cores)   CPU%   MEMORY(bytes)   MEM-LIMIT   DISK\n"
            "team        idle   iaaa         -            -      -               -           -\n"
            "team        busy   ibbb         250m         12%    45Mi            512Mi       "
            "1Mi/1024Mi\n"
            "other       new    -            -            -      -               -           -\n");
}

TEST(TopUsage, SortsTheHeaviestFirstAndUnsampledLast) {
  auto sample = [](double pct, int64_t mem) {
    UsageSample s;
    s.cpu_count = 1;
    s.cpu_used_pct = pct;
    s.mem_used = mem;
    return s;
  };
  std::vector<SandboxUsage> rows = {{"d", "none", "i0", std::nullopt},
                                    {"d", "cpu", "i1", sample(90, 10)},
                                    {"d", "mem", "i2", sample(1, 1000)}};
  SortUsage(rows, UsageSort::kCpu);
  EXPECT_EQ(rows[0].name, "cpu");
  EXPECT_EQ(rows[2].name, "none");
  SortUsage(rows, UsageSort::kMemory);
  EXPECT_EQ(rows[0].name, "mem");
  EXPECT_EQ(rows[2].name, "none");
}

TEST(TopUsage, FormatsBytesLikeKubectlTop) {
  EXPECT_EQ(FormatBytes(0), "0Ki");
  EXPECT_EQ(FormatBytes(512 * 1024), "512Ki");
  EXPECT_EQ(FormatBytes(64 << 20), "64Mi");
  EXPECT_EQ(FormatBytes(int64_t{3} << 30), "3072Mi");
  EXPECT_EQ(FormatBytes(int64_t{12} << 30), "12Gi");
  // A malformed or missing field is 0, never a throw.
  UsageSample odd = ParseUsageSample(Json::parse(R"({"cpuCount": "x", "memUsed": null})"));
  EXPECT_EQ(odd.cpu_count, 0);
  EXPECT_EQ(odd.mem_used, 0);
}

}  // namespace
}  // namespace warren::cli
