// The Grafana dashboard reads only names Warren exports: every metric an expression reads is
// registered somewhere in src/ under that exact name (a string literal), so renaming a metric
// without the dashboard fails here. The privileged metrics test checks the same names against
// a live scrape (tests/privileged/pool/metrics_test.cc).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
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

// Prometheus' own parser accepts every panel expression (Grafana's variables replaced as Grafana
// would), so a typo in PromQL fails here rather than as an empty panel. Uses promtool when the
// machine has it (Debian's prometheus package), as the Prometheus integration test does.
TEST(GrafanaDashboard, PrometheusParsesEveryExpression) {
  if (std::system("command -v promtool >/dev/null 2>&1") != 0) GTEST_SKIP() << "no promtool";
  std::ifstream f(DashboardPath());
  std::stringstream text;
  text << f.rdbuf();
  auto doc = api::ParseJson(text.str());
  ASSERT_TRUE(doc.ok()) << doc.status();
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  int n = 0;
  for (const auto& panel : (*doc)["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      for (auto [from, to] :
           {std::pair<std::string, std::string>{"$__rate_interval", "5m"}, {"$namespace", ".*"}}) {
        for (size_t at; (at = expr.find(from)) != std::string::npos;) {
          expr.replace(at, from.size(), to);
        }
      }
      ASSERT_EQ(expr.find('\''), std::string::npos) << expr;  // single-quoted in YAML below
      rules += "      - record: dashboard:expr_" + std::to_string(n++) + "\n        expr: '" +
               expr + "'\n";
    }
  }
  char path[] = "/tmp/warren-dashboard-rules-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, rules.data(), rules.size()), static_cast<ssize_t>(rules.size()));
  close(fd);
  int rc = std::system(("promtool check rules " + std::string(path) + " >/dev/null 2>&1").c_str());
  if (rc != 0) (void)std::system(("promtool check rules " + std::string(path)).c_str());
  unlink(path);
  EXPECT_EQ(rc, 0) << rules;
}

}  // namespace
}  // namespace warren::dashboard_testing
