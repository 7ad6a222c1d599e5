// The Grafana dashboard reads only names Warren exports: every metric an expression reads is
// registered somewhere in src/ under that exact name (a string literal), so renaming a metric
// without the dashboard fails here. The privileged metrics test checks the same names against
// a live scrape (tests/privileged/pool/metrics_test.cc).

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/json.h"
#include "dashboard_names.h"

namespace warren::dashboard_testing {
namespace {

std::string SourceText() {
  std::string all;
  for (const auto& entry :
       std::filesystem::recursive_directory_iterator(WARREN_SOURCE_DIR "/src")) {
    const auto ext = entry.path().extension();
    if (ext != ".cc" && ext != ".h") continue;
    const std::string name = entry.path().filename().string();
    if (name.ends_with("_test.cc")) continue;  // a test's name is not an export
    std::ifstream f(entry.path());
    std::stringstream s;
    s << f.rdbuf();
    all += s.str();
  }
  return all;
}

TEST(MetricNamesIn, FindsSelectorsRangesAndLoneArguments) {
  EXPECT_THAT(
      MetricNamesIn(
          R"(histogram_quantile(0.99, sum by (le) (rate(a_seconds_bucket{source="e2b"}[5m]))))"),
      ::testing::ElementsAre("a_seconds"));
  EXPECT_THAT(MetricNamesIn("sum(sandbox_routes)"), ::testing::ElementsAre("sandbox_routes"));
  EXPECT_THAT(MetricNamesIn("label_values(sandbox_status_phase, namespace)"),
              ::testing::ElementsAre("sandbox_status_phase"));
  EXPECT_THAT(MetricNamesIn("sum by (phase) (x{namespace=~\"$namespace\"})"),
              ::testing::ElementsAre("x"));
}

TEST(GrafanaDashboard, IsAnImportableDashboard) {
  std::ifstream f(DashboardPath());
  std::stringstream text;
  text << f.rdbuf();
  auto doc = api::ParseJson(text.str());
  ASSERT_TRUE(doc.ok()) << doc.status();
  EXPECT_GE((*doc)["schemaVersion"].get<int>(), 39);
  ASSERT_TRUE((*doc)["__inputs"].is_array());
  EXPECT_EQ((*doc)["__inputs"][0]["name"], "DS_PROMETHEUS");
  ASSERT_TRUE((*doc)["panels"].is_array());
  for (const auto& p : (*doc)["panels"]) {
    EXPECT_EQ(p["datasource"]["uid"], "${DS_PROMETHEUS}") << p["title"];
    EXPECT_FALSE(p["targets"].empty()) << p["title"];
  }
}

TEST(GrafanaDashboard, EveryMetricItReadsIsOneWarrenExports) {
  auto names = DashboardMetricNames(DashboardPath());
  ASSERT_TRUE(names.ok()) << names.status();
  const std::string source = SourceText();
  for (const std::string& name : *names) {
    EXPECT_NE(source.find('"' + name + '"'), std::string::npos)
        << name << " is read by the dashboard but registered nowhere in src/";
  }
}

}  // namespace
}  // namespace warren::dashboard_testing
