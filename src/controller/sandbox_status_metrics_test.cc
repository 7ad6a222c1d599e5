#include "controller/sandbox_status_metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "base/clock.h"
#include "controller/testing/eventually.h"
#include "obs/testing/exposition.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using obs::testing::SumOf;

class SandboxStatusMetricsTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(metrics_.Start().ok()); }
  void TearDown() override { metrics_.Stop(); }

  double Value(const std::string& family, const std::map<std::string, std::string>& labels) {
    auto f = obs::testing::ParseExposition(registry_.Exposition());
    EXPECT_TRUE(f.ok()) << f.status();
    return f.ok() ? SumOf(*f, family, labels) : -1;
  }
  bool Mentions(const std::string& name) {
    return registry_.Exposition().find("name=\"" + name + "\"") != std::string::npos;
  }

  store::testing::TempStore store_;
  obs::Metrics registry_;
  SandboxStatusMetrics metrics_{store_.store(), registry_};
};

TEST_F(SandboxStatusMetricsTest, FollowsPhaseAndReadinessAndGoesWithTheSandbox) {
  api::Object o = store::testing::MakeSandbox("watched");
  o.metadata.labels[api::labels::kSandboxPool] = "py";
  auto created = store_->Create(std::move(o));
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(testing::Eventually([&] { return Mentions("watched"); }));
  // No status yet: a series per phase, all 0; not ready.
  EXPECT_EQ(Value("sandbox_status_phase", {{"name", "watched"}}), 0);
  EXPECT_EQ(Value("sandbox_status_ready", {{"name", "watched"}, {"source", "k8s"}}), 0);
  EXPECT_EQ(Value("sandbox_info", {{"name", "watched"}, {"sandbox_pool", "py"}}), 1);
  EXPECT_GT(Value("sandbox_created", {{"name", "watched"}}), 1e9);

  api::Object running = *created;
  api::SandboxStatus st;
  st.phase = api::sandbox_phase::kRunning;
  st.node_name = "n1";
  api::SetCondition(st.conditions, {.type = "Ready", .status = "True"}, base::RealClock().Now());
  api::EncodeStatus(st, running);
  ASSERT_TRUE(store_->UpdateStatus(std::move(running)).ok());
  ASSERT_TRUE(testing::Eventually([&] {
    return Value("sandbox_status_ready", {{"name", "watched"}}) == 1;
  }));
  EXPECT_EQ(Value("sandbox_status_phase", {{"name", "watched"}, {"phase", "Running"}}), 1);
  EXPECT_EQ(Value("sandbox_status_phase", {{"name", "watched"}}), 1);  // the others are 0
  // The node became known: one info series, with it.
  EXPECT_EQ(Value("sandbox_info", {{"name", "watched"}}), 1);
  EXPECT_EQ(Value("sandbox_info", {{"name", "watched"}, {"node", "n1"}}), 1);

  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "watched").ok());
  EXPECT_TRUE(testing::Eventually([&] { return !Mentions("watched"); })) << registry_.Exposition();
}

TEST_F(SandboxStatusMetricsTest, SeriesCountFollowsTheLiveSandboxes) {
  // Many sandboxes come and go; the exposition keeps only the live ones' series.
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("s" + std::to_string(i))).ok());
  }
  ASSERT_TRUE(testing::Eventually([&] { return Mentions("s19"); }));
  for (int i = 0; i < 19; ++i) {
    ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "s" + std::to_string(i)).ok());
  }
  ASSERT_TRUE(testing::Eventually([&] { return !Mentions("s0") && !Mentions("s18"); }));
  auto f = obs::testing::ParseExposition(registry_.Exposition());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->at("sandbox_status_phase").samples.size(), 9u);  // one sandbox × 9 phases
  EXPECT_EQ(f->at("sandbox_status_ready").samples.size(), 1u);
}

}  // namespace
}  // namespace warren::controller
