// A real Prometheus server scrapes `warren server`'s /metrics, and the pool gauges come back
// through Prometheus' own HTTP API.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "processes.h"

namespace warren::pool_testing {
namespace {

using namespace std::chrono_literals;

TEST(PoolMetrics, PrometheusScrapesThePoolGauges) {
  WarrenServer server;
  server.Start();
  // No node agent runs in this server, so the members stay Pending: three replicas, none
  // available.
  server.Apply(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata:
  name: scraped
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: main
          image: base
)");
  // The server's metrics listener (loopback, no key): what a Prometheus on the host scrapes.
  Prometheus prometheus({server.metrics_address()}, 1s);
  std::optional<double> replicas, desired, available;
  bool seen = Eventually(
      [&] {
        auto r = prometheus.Query(R"(sandboxset_replicas{name="scraped",namespace="default"})");
        auto d =
            prometheus.Query(R"(sandboxset_desired_replicas{name="scraped",namespace="default"})");
        auto a = prometheus.Query(
            R"(sandboxset_available_replicas{name="scraped",namespace="default"})");
        if (!r.ok() || !d.ok() || !a.ok()) return false;
        replicas = *r;
        desired = *d;
        available = *a;
        return replicas == 3.0 && desired == 3.0 && available.has_value();
      },
      60s);
  ASSERT_TRUE(seen) << "prometheus log:\n" << prometheus.log() << "\nserver log:\n" << server.log();
  EXPECT_EQ(*available, 0.0);
  // Scaling shows up in the next scrapes.
  auto [code, out] = server.Cli({"scale", "sbs", "scraped", "--replicas", "5"});
  ASSERT_EQ(code, 0) << out;
  EXPECT_TRUE(Eventually(
      [&] {
        auto r = prometheus.Query(R"(sandboxset_replicas{name="scraped"})");
        return r.ok() && *r == 5.0;
      },
      60s));
  // Prometheus itself says the target is up.
  auto up = prometheus.Query("up{job=\"warren\"}");
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(*up, 1.0);
}

}  // namespace
}  // namespace warren::pool_testing
