#include "obs/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "net/http_client.h"
#include "net/http_server.h"
#include "obs/metrics_route.h"
#include "obs/operation_metrics.h"
#include "obs/testing/exposition.h"

namespace warren::obs {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(Metrics, ExpositionHasHelpTypeAndLabelledSeries) {
  Metrics m;
  auto& claims = m.Counter("sandbox_claim_total", "Claims by result and lock type.");
  claims.Add({{"namespace", "default"}, {"result", "success"}, {"lock_type", "pool"}}).Increment(3);
  auto& replicas = m.Gauge("sandboxset_replicas", "Pool members.");
  replicas.Add({{"namespace", "team-a"}, {"name", "py"}}).Set(7);

  std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("# HELP sandbox_claim_total Claims by result and lock type.\n"));
  EXPECT_THAT(text, HasSubstr("# TYPE sandbox_claim_total counter\n"));
  EXPECT_THAT(text, HasSubstr("sandbox_claim_total{lock_type=\"pool\",namespace=\"default\",result="
                              "\"success\"} 3"));
  EXPECT_THAT(text, HasSubstr("# TYPE sandboxset_replicas gauge\n"));
  EXPECT_THAT(text, HasSubstr("sandboxset_replicas{name=\"py\",namespace=\"team-a\"} 7"));
  // Families are sorted by name, so a scrape diff between two runs is stable.
  EXPECT_LT(text.find("sandbox_claim_total"), text.find("sandboxset_replicas"));
}

TEST(Metrics, LabelValuesAreEscaped) {
  Metrics m;
  m.Gauge("g", "h").Add({{"v", "a\"b\\c\nd"}}).Set(1);
  EXPECT_THAT(m.Exposition(), HasSubstr(R"(g{v="a\"b\\c\nd"} 1)"));
}

TEST(Metrics, RegisteringAFamilyTwiceSharesItsSeries) {
  Metrics m;
  auto& a = m.Counter("warren_x_total", "x", {{"source", "k8s"}});
  auto& b = m.Counter("warren_x_total", "x", {{"source", "k8s"}});
  EXPECT_EQ(&a, &b);
  a.Add({{"k", "v"}}).Increment();
  b.Add({{"k", "v"}}).Increment();
  EXPECT_THAT(m.Exposition(), HasSubstr("warren_x_total{source=\"k8s\",k=\"v\"} 2"));
}

TEST(Metrics, HistogramUsesTheGivenBuckets) {
  Metrics m;
  auto& h = m.Histogram("sandbox_claim_duration_seconds", "Claim latency.");
  auto& series = h.Add({{"namespace", "default"}}, DefaultDurationBuckets());
  series.Observe(0.015);
  series.Observe(0.5);
  std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("sandbox_claim_duration_seconds_bucket{namespace=\"default\","
                              "le=\"0.02\"} 1"));
  EXPECT_THAT(text, HasSubstr("sandbox_claim_duration_seconds_bucket{namespace=\"default\","
                              "le=\"0.64\"} 2"));
  EXPECT_THAT(text, HasSubstr("sandbox_claim_duration_seconds_count{namespace=\"default\"} 2"));
}

TEST(Metrics, RemovedSeriesDisappear) {
  Metrics m;
  auto& fam = m.Gauge("sandboxset_available_replicas", "h");
  auto& gone = fam.Add({{"name", "gone"}});
  fam.Add({{"name", "kept"}}).Set(1);
  fam.Remove(&gone);
  std::string text = m.Exposition();
  EXPECT_THAT(text, Not(HasSubstr("gone")));
  EXPECT_THAT(text, HasSubstr("kept"));
}

TEST(Metrics, CollectCallbacksRunPerScrapeUntilRemoved) {
  Metrics m;
  auto& g = m.Gauge("warren_test_scrapes", "h").Add({});
  int id = m.AddCollectCallback([&g] { g.Increment(); });
  m.Exposition();
  EXPECT_THAT(m.Exposition(), HasSubstr("warren_test_scrapes 2"));
  m.RemoveCollectCallback(id);
  EXPECT_THAT(m.Exposition(), HasSubstr("warren_test_scrapes 2"));
}

prometheus::MetricFamily OneGauge(const std::string& name, const std::string& label, double v) {
  prometheus::MetricFamily f{.name = name, .help = "h", .type = prometheus::MetricType::Gauge};
  prometheus::ClientMetric m;
  m.label = {{"name", label}};
  m.gauge.value = v;
  f.metric.push_back(m);
  return f;
}

TEST(Metrics, FamilySourcesRenderPerScrapeAndMergeWithRegisteredSeries) {
  Metrics m;
  m.Gauge("sandbox_x", "h").Add({{"name", "registered"}}).Set(1);
  double value = 2;
  int first = m.AddFamilySource("x", [&] {
    return std::vector<prometheus::MetricFamily>{OneGauge("sandbox_x", "first", value)};
  });
  std::string text = m.Exposition();
  EXPECT_THAT(text, HasSubstr("sandbox_x{name=\"first\"} 2"));
  EXPECT_THAT(text, HasSubstr("sandbox_x{name=\"registered\"} 1"));
  auto families = testing::ParseExposition(text);  // one HELP and TYPE for the name
  ASSERT_TRUE(families.ok()) << families.status() << "\n" << text;
  value = 3;
  EXPECT_THAT(m.Exposition(), HasSubstr("sandbox_x{name=\"first\"} 3"));

  // A source under the same key takes over; the first one's removal leaves it alone.
  int second = m.AddFamilySource("x", [] {
    return std::vector<prometheus::MetricFamily>{OneGauge("sandbox_x", "second", 4)};
  });
  m.RemoveFamilySource(first);
  text = m.Exposition();
  EXPECT_THAT(text, Not(HasSubstr("first")));
  EXPECT_THAT(text, HasSubstr("sandbox_x{name=\"second\"} 4"));
  m.RemoveFamilySource(second);
  text = m.Exposition();
  EXPECT_THAT(text, Not(HasSubstr("second")));
  EXPECT_THAT(text, HasSubstr("registered"));
}

TEST(Metrics, ReferenceBuckets) {
  auto d = DefaultDurationBuckets();
  ASSERT_EQ(d.size(), 12u);
  EXPECT_DOUBLE_EQ(d.front(), 0.02);
  EXPECT_DOUBLE_EQ(d.back(), 0.02 * 2048);
  auto c = ClaimDurationBuckets();
  ASSERT_EQ(c.size(), 10u);
  EXPECT_DOUBLE_EQ(c[3], 0.08);
  EXPECT_EQ(RecycleDurationBuckets().size(), 13u);
  auto r = RetryBuckets();
  ASSERT_EQ(r.size(), 11u);
  EXPECT_DOUBLE_EQ(r.back(), 10);
  EXPECT_DOUBLE_EQ(FastDurationBuckets().front(), 0.00025);
}

TEST(Metrics, OneNameWithTwoSourcesIsOneFamilyWithOneHelpAndType) {
  // The node (source k8s) and the E2B API (source e2b) both record pause durations.
  Metrics m;
  m.Histogram("sandbox_pause_duration_seconds", "Pause latency.", {{"source", "k8s"}})
      .Add({{"namespace", "a"}}, DefaultDurationBuckets())
      .Observe(0.1);
  m.Histogram("sandbox_pause_duration_seconds", "Pause latency.", {{"source", "e2b"}})
      .Add({{"namespace", "a"}}, DefaultDurationBuckets())
      .Observe(0.2);
  std::string text = m.Exposition();
  auto families = testing::ParseExposition(text);
  ASSERT_TRUE(families.ok()) << families.status() << "\n" << text;
  const auto& f = families->at("sandbox_pause_duration_seconds");
  EXPECT_EQ(f.type, "histogram");
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_duration_seconds", {{"source", "k8s"}},
                           "sandbox_pause_duration_seconds_count"),
            1);
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_duration_seconds", {{"source", "e2b"}},
                           "sandbox_pause_duration_seconds_count"),
            1);
}

TEST(Metrics, ANameIsOneTypeOnly) {
  Metrics m;
  m.Counter("warren_x_total", "x", {{"source", "k8s"}});
  EXPECT_DEATH(m.Gauge("warren_x_total", "x", {{"source", "e2b"}}), "registered as counter");
}

TEST(OperationMetrics, CountsBothResultsAndTimesSuccessesOnly) {
  Metrics m;
  OperationMetrics op({.duration = "sandbox_pause_duration_seconds",
                       .duration_help = "h",
                       .total = "sandbox_pause_total",
                       .total_help = "h",
                       .const_labels = {{"source", "k8s"}}},
                      m);
  op.Record("team", true, 0.03);
  op.Record("team", true, 0.05);
  op.Record("team", false, 9);
  auto families = testing::ParseExposition(m.Exposition());
  ASSERT_TRUE(families.ok()) << families.status();
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_total",
                           {{"namespace", "team"}, {"result", "success"}, {"source", "k8s"}}),
            2);
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_total", {{"result", "failure"}}), 1);
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_duration_seconds", {{"namespace", "team"}},
                           "sandbox_pause_duration_seconds_count"),
            2);
  // The reference's default layout: 0.02 s × 2^n, 12 buckets (and +Inf).
  EXPECT_EQ(testing::SumOf(*families, "sandbox_pause_duration_seconds", {{"le", "0.04"}},
                           "sandbox_pause_duration_seconds_bucket"),
            1);
  EXPECT_EQ(families->at("sandbox_pause_duration_seconds").samples.size(), 13u + 2u);
}

TEST(ParseExposition, RefusesWhatAScraperWould) {
  EXPECT_FALSE(testing::ParseExposition("# HELP a x\n# TYPE a gauge\na 1\n# HELP a x\n").ok());
  EXPECT_FALSE(testing::ParseExposition("# TYPE a gauge\na 1\n").ok());  // no HELP
  EXPECT_FALSE(testing::ParseExposition("# HELP a x\n# TYPE a gauge\nb 1\n").ok());
  EXPECT_FALSE(testing::ParseExposition("# HELP 1a x\n# TYPE 1a gauge\n").ok());
  EXPECT_TRUE(testing::ParseExposition("# HELP a x\n# TYPE a gauge\na{l=\"v\"} 1\n").ok());
}

TEST(MetricsRoute, ServesTheTextFormatOverHttp) {
  Metrics m;
  m.Gauge("sandboxset_replicas", "Pool members.").Add({{"name", "p"}}).Set(4);
  net::Router router;
  AddMetricsRoute(router, m);
  auto server = net::HttpServer::Start({.loop_threads = 1}, std::move(router));
  ASSERT_TRUE(server.ok()) << server.status();
  auto client = net::HttpClient::ForAddress("127.0.0.1:" + std::to_string((*server)->port()));
  ASSERT_TRUE(client.ok());
  auto r = (*client)->Do({.method = "GET", .target = "/metrics"});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers.Get("Content-Type").value_or(""),
            "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_THAT(r->body, HasSubstr("sandboxset_replicas{name=\"p\"} 4"));
}

}  // namespace
}  // namespace warren::obs
