// The OpenKruise Agents metric names (reference §5.1) from a real `warren server` with its node
// agent: a pool member is claimed by an E2B create, paused, resumed, snapshotted and killed;
// the server's /metrics (the loopback listener a Prometheus scrapes) then has every family with
// HELP and TYPE, each name once, the counts moved by exactly what was done, with the labels
// the reference gives them, and the killed sandbox's per-object series are gone. The Grafana
// dashboard reads only names this scrape has. Real server, node agent, sandboxes (root).

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>

#include "dashboard_names.h"
#include "e2b_client.h"
#include "net/http_client.h"
#include "obs/testing/exposition.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;
using obs::testing::ExposedFamily;
using obs::testing::SumOf;
using Families = std::map<std::string, ExposedFamily>;

class Scraper {
 public:
  explicit Scraper(const std::string& address)
      : http_(std::move(*net::HttpClient::ForAddress(address))) {}
  std::string Text() {
    auto r = http_->Do({.method = "GET", .target = "/metrics", .timeout = 10s});
    return r.ok() && r->status == 200 ? r->body : "";
  }

 private:
  std::unique_ptr<net::HttpClient> http_;
};

// An E2B call with the admin key; the status code and body.
std::pair<int, std::string> E2b(WarrenServer& server, const std::string& key,
                                const std::string& method, const std::string& target,
                                const std::string& body = "") {
  net::ClientRequest req{.method = method, .target = target};
  req.headers.Set("X-API-Key", key);
  if (!body.empty()) {
    req.headers.Set("Content-Type", "application/json");
    req.body = body;
  }
  req.timeout = 120s;
  auto r = server.http().Do(req);
  if (!r.ok()) return {0, r.status().ToString()};
  return {r->status, r->body};
}

double Count(const Families& f, const std::string& histogram,
             const std::map<std::string, std::string>& labels) {
  return SumOf(f, histogram, labels, histogram + "_count");
}

TEST(Metrics, TheReferenceNamesCountWhatWasDoneAndPerObjectSeriesGoWithTheObject) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
  WarrenServer server;  // deletes its sandboxes when it goes
  server.EnableNodeAgent();
  std::string key = BootstrapAdminKey(server);
  server.Start();
  server.Apply(PoolManifest("metered", 1));
  // A pool whose members go back to it when killed (recycling).
  server.Apply(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata:
  name: recycled
  annotations: {agents.kruise.io/cleanup-enabled: "true"}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: main
          image: base
)");
  auto pools_full = [&] {
    return AvailableReplicas(server, "metered") >= 1 && AvailableReplicas(server, "recycled") >= 1;
  };
  ASSERT_TRUE(Eventually(pools_full, 300s)) << server.log();
  Scraper scraper(server.metrics_address());
  const std::map<std::string, std::string> ns = {{"namespace", "default"}};
  auto with = [&](std::map<std::string, std::string> more) {
    more.insert(ns.begin(), ns.end());
    return more;
  };

  // Claim, pause, resume, snapshot, fork, kill: one of each through the E2B API.
  E2bClient e2b(server, key);
  auto created = e2b.Create("metered", /*create_on_no_stock=*/false);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::string id = (*created)["sandboxID"];
  auto claimed = ListSandboxes(server, "agents.kruise.io/sandbox-claimed=true");
  ASSERT_TRUE(claimed.ok());
  ASSERT_EQ(claimed->size(), 1u);
  const std::string name = (*claimed)[0]["metadata"]["name"];
  {
    auto f = obs::testing::ParseExposition(scraper.Text());
    ASSERT_TRUE(f.ok()) << f.status();
    // The claimed sandbox has its status series, Running and Ready.
    EXPECT_EQ(SumOf(*f, "sandbox_status_phase", with({{"name", name}, {"phase", "Running"}})), 1);
    EXPECT_EQ(SumOf(*f, "sandbox_status_phase", with({{"name", name}})), 1);
    EXPECT_EQ(SumOf(*f, "sandbox_status_ready", with({{"name", name}, {"source", "k8s"}})), 1);
  }
  auto [pause_code, pause_body] = E2b(server, key, "POST", "/sandboxes/" + id + "/pause");
  ASSERT_EQ(pause_code, 204) << pause_body;
  auto [resume_code, resume_body] =
      E2b(server, key, "POST", "/sandboxes/" + id + "/resume", R"({"timeout":300})");
  ASSERT_EQ(resume_code, 201) << resume_body;
  auto [snap_code, snap_body] =
      E2b(server, key, "POST", "/sandboxes/" + id + "/snapshots", R"({"name":"metered"})");
  ASSERT_EQ(snap_code, 201) << snap_body;
  auto [fork_code, fork_body] =
      E2b(server, key, "POST", "/sandboxes/" + id + "/fork", R"({"count":1})");
  ASSERT_EQ(fork_code, 201) << fork_body;
  ASSERT_TRUE(e2b.Kill(id).ok());
  // And a kill that recycles: the member is reset and returns to its pool.
  auto recyclable = e2b.Create("recycled", /*create_on_no_stock=*/false);
  ASSERT_TRUE(recyclable.ok()) << recyclable.status();
  ASSERT_TRUE(e2b.Kill((*recyclable)["sandboxID"]).ok());
  // The node has torn it down: the object is gone.
  ASSERT_TRUE(Eventually(
      [&] {
        auto all = ListSandboxes(server, "");
        if (!all.ok()) return false;
        for (const auto& o : *all) {
          if (o["metadata"]["name"] == name) return false;
        }
        return true;
      },
      120s))
      << server.log();

  // The pools refill (one with a new member, one with the recycled one).
  ASSERT_TRUE(Eventually(pools_full, 300s)) << server.log();

  std::string text;
  Families f;
  // The per-object series go with the informer's delete event: wait for it.
  ASSERT_TRUE(Eventually(
      [&] {
        text = scraper.Text();
        auto parsed = obs::testing::ParseExposition(text);
        if (!parsed.ok()) return false;
        f = std::move(*parsed);
        return SumOf(f, "sandbox_recycle_total", with({{"source", "k8s"}})) >= 1 &&
               SumOf(f, "sandbox_deletion_duration_seconds", with({{"source", "k8s"}}),
                     "sandbox_deletion_duration_seconds_count") >= 1 &&
               text.find("name=\"" + name + "\"") == std::string::npos;
      },
      30s))
      << text;
  // Well-formed, each name once, HELP and TYPE everywhere (ParseExposition refuses otherwise).
  ASSERT_TRUE(obs::testing::ParseExposition(text).ok())
      << obs::testing::ParseExposition(text).status();

  // Every family this run must have produced, with its type.
  const std::map<std::string, std::string> expected = {
      {"sandbox_claim_total", "counter"},
      {"sandbox_claim_duration_seconds", "histogram"},
      {"sandbox_claim_retries", "histogram"},
      {"sandbox_claim_creation_responses", "counter"},
      {"sandboxset_sandboxes_claimed_total", "counter"},
      {"sandboxset_sandboxes_created_total", "counter"},
      {"sandboxset_replicas", "gauge"},
      {"sandboxset_available_replicas", "gauge"},
      {"sandboxset_desired_replicas", "gauge"},
      {"sandbox_creation_total", "counter"},
      {"sandbox_creation_duration_seconds", "histogram"},
      {"sandbox_pause_total", "counter"},
      {"sandbox_pause_responses", "counter"},
      {"sandbox_pause_duration_seconds", "histogram"},
      {"sandbox_resume_total", "counter"},
      {"sandbox_resume_responses", "counter"},
      {"sandbox_resume_duration_seconds", "histogram"},
      {"sandbox_delete_responses", "counter"},
      {"sandbox_delete_duration_seconds", "histogram"},
      {"sandbox_deletion_duration_seconds", "histogram"},
      {"sandbox_snapshot_total", "counter"},
      {"sandbox_clone_total", "counter"},
      {"sandbox_clone_duration_seconds", "histogram"},
      {"sandbox_recycle_total", "counter"},
      {"sandbox_recycle_responses", "counter"},
      {"sandbox_recycle_duration_seconds", "histogram"},
      {"sandbox_snapshot_duration_seconds", "histogram"},
      {"sandbox_status_phase", "gauge"},
      {"sandbox_status_ready", "gauge"},
      {"sandbox_created", "gauge"},
      {"sandbox_info", "gauge"},
      {"sandbox_routes", "gauge"},
  };
  for (const auto& [family, type] : expected) {
    ASSERT_TRUE(f.contains(family)) << family << " missing from\n" << text;
    EXPECT_EQ(f.at(family).type, type) << family;
    EXPECT_FALSE(f.at(family).help.empty()) << family;
  }

  // One claim from the pool (E2B, lock type update), its duration in the reference's buckets.
  EXPECT_EQ(SumOf(f, "sandbox_claim_total",
                  with({{"source", "e2b"}, {"result", "success"}, {"lock_type", "update"}})),
            2);
  EXPECT_EQ(SumOf(f, "sandbox_claim_total", with({{"result", "failure"}})), 0);
  EXPECT_EQ(Count(f, "sandbox_claim_duration_seconds", with({{"source", "e2b"}})), 2);
  // The reference's default layout: 0.02 s × 2^n, 12 buckets, and +Inf.
  int buckets = 0;
  bool first = false;
  for (const auto& sample : f.at("sandbox_claim_duration_seconds").samples) {
    if (sample.name != "sandbox_claim_duration_seconds_bucket") continue;
    if (sample.labels.at("source") != "e2b" || sample.labels.at("namespace") != "default") continue;
    ++buckets;
    first = first || sample.labels.at("le") == "0.02";
  }
  EXPECT_EQ(buckets, 13);
  EXPECT_TRUE(first);
  EXPECT_EQ(SumOf(f, "sandbox_claim_creation_responses", with({{"result", "success"}})), 2);
  EXPECT_EQ(SumOf(f, "sandboxset_sandboxes_claimed_total", with({{"name", "metered"}})), 1);

  // The node: two members, the fork and a refill were made; one pause, one resume, one
  // teardown (the recycled member is reset, not torn down), one recycle.
  EXPECT_GE(SumOf(f, "sandbox_creation_total", with({{"source", "k8s"}, {"result", "success"}})),
            4);
  EXPECT_EQ(SumOf(f, "sandbox_creation_total", with({{"result", "failure"}})), 0);
  EXPECT_EQ(SumOf(f, "sandbox_pause_total", with({{"source", "k8s"}, {"result", "success"}})), 1);
  EXPECT_EQ(SumOf(f, "sandbox_resume_total", with({{"source", "k8s"}, {"result", "success"}})), 1);
  EXPECT_EQ(Count(f, "sandbox_pause_duration_seconds", with({{"source", "k8s"}})), 1);
  EXPECT_EQ(Count(f, "sandbox_resume_duration_seconds", with({{"source", "k8s"}})), 1);
  EXPECT_EQ(Count(f, "sandbox_deletion_duration_seconds", with({{"source", "k8s"}})), 1);
  EXPECT_EQ(SumOf(f, "sandbox_recycle_total", with({{"source", "k8s"}, {"result", "success"}})), 1);
  EXPECT_EQ(Count(f, "sandbox_recycle_duration_seconds", with({{"source", "k8s"}})), 1);

  // The E2B API: one of each, successful.
  for (const char* counter :
       {"sandbox_pause_responses", "sandbox_resume_responses", "sandbox_delete_responses",
        "sandbox_snapshot_total", "sandbox_clone_total", "sandbox_recycle_responses"}) {
    EXPECT_EQ(SumOf(f, counter, with({{"source", "e2b"}, {"result", "success"}})), 1) << counter;
    EXPECT_EQ(SumOf(f, counter, with({{"result", "failure"}})), 0) << counter;
  }
  for (const char* histogram :
       {"sandbox_pause_duration_seconds", "sandbox_resume_duration_seconds",
        "sandbox_delete_duration_seconds", "sandbox_snapshot_duration_seconds",
        "sandbox_clone_duration_seconds", "sandbox_recycle_duration_seconds"}) {
    EXPECT_EQ(Count(f, histogram, with({{"source", "e2b"}})), 1) << histogram;
  }

  // Per-object series: the killed sandbox has none left; the refilled member has its own.
  EXPECT_EQ(text.find("name=\"" + name + "\""), std::string::npos);
  EXPECT_EQ(SumOf(f, "sandboxset_replicas", with({{"name", "metered"}})), 1);

  // The Grafana dashboard reads only names this server exports.
  auto dashboard = dashboard_testing::DashboardMetricNames(dashboard_testing::DashboardPath());
  ASSERT_TRUE(dashboard.ok()) << dashboard.status();
  for (const std::string& used : *dashboard) {
    EXPECT_TRUE(f.contains(used)) << "the dashboard reads " << used << ", not in the scrape";
  }
}

// Deleting a SandboxSet removes its gauges (no series for pools that are gone).
TEST(Metrics, ADeletedPoolLeavesNoSeries) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root (real sandboxes)";
  WarrenServer server;
  server.EnableNodeAgent();
  server.Start();
  server.Apply(PoolManifest("fleeting", 1));
  ASSERT_TRUE(Eventually([&] { return AvailableReplicas(server, "fleeting") >= 1; }, 300s))
      << server.log();
  Scraper scraper(server.metrics_address());
  EXPECT_NE(scraper.Text().find("name=\"fleeting\""), std::string::npos);
  auto [code, out] = server.Cli({"delete", "sandboxset", "fleeting"});
  ASSERT_EQ(code, 0) << out;
  std::string text;
  EXPECT_TRUE(Eventually(
      [&] {
        text = scraper.Text();
        return !text.empty() && text.find("sandbox_pool=\"fleeting\"") == std::string::npos &&
               text.find("sandboxset_replicas{source=\"k8s\",name=\"fleeting\"") ==
                   std::string::npos;
      },
      120s))
      << text;
}

}  // namespace
}  // namespace warren::pool_testing
