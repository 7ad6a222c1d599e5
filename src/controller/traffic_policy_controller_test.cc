#include "controller/traffic_policy_controller.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "api/yaml_codec.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

api::Object Policy(std::string_view name, std::string_view yaml_spec,
                   std::string_view ns = "default") {
  std::string doc = fmt::format(
      "apiVersion: agents.kruise.io/v1alpha1\nkind: TrafficPolicy\nmetadata: {{name: {}, "
      "namespace: "
      "{}}}\nspec:\n{}\n",
      name, ns, yaml_spec);
  return api::ObjectFromJson(*api::ParseYaml(doc)).value();
}

class TrafficPolicyControllerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(controller_.Start().ok()); }

  std::string AnnotationOf(const std::string& name, const std::string& ns = "default") {
    auto o = store_->Get(api::SandboxKind(), ns, name);
    if (!o.ok()) return "<gone>";
    auto it = o->metadata.annotations.find(api::annotations::kTrafficPolicy);
    return it == o->metadata.annotations.end() ? "" : it->second;
  }
  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }
  api::Json StatusOf(const std::string& name) {
    return store_->Get(api::TrafficPolicyKind(), "default", name)->status();
  }

  store::testing::TempStore store_;
  TrafficPolicyController controller_{store_.store()};
};

TEST_F(TrafficPolicyControllerTest, SelectedSandboxesCarryTheMergedPolicyAndOthersNothing) {
  ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("a", {{"team", "x"}})).ok());
  ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("b", {{"team", "y"}})).ok());
  ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("c", {{"team", "x"}}, "other")).ok());
  ASSERT_TRUE(store_
                  ->Create(Policy("closed", R"(  selector: {matchLabels: {team: x}}
  egress: {rules: [{action: reject, to: [{cidr: 0.0.0.0/0}]}]})"))
                  .ok());
  ASSERT_TRUE(
      store_
          ->Create(Policy(
              "pypi",
              R"(  egress: {rules: [{action: allow, to: [{fqdn: "*.pypi.org"}, {cidr: 1.1.1.1}]}]})"))
          .ok());

  const std::string both =
      R"({"allowInternetAccess":true,"allowOut":["1.1.1.1/32","*.pypi.org"],"denyOut":["0.0.0.0/0"]})";
  EXPECT_TRUE(Eventually([&] { return AnnotationOf("a") == both; })) << AnnotationOf("a");
  EXPECT_TRUE(Eventually([&] {
    return AnnotationOf("b") ==
           R"({"allowInternetAccess":true,"allowOut":["1.1.1.1/32","*.pypi.org"],"denyOut":[]})";
  })) << AnnotationOf("b");
  EXPECT_EQ(AnnotationOf("c", "other"), "") << "policies hold in their own namespace";
  EXPECT_TRUE(Eventually([&] {
    api::Json s = StatusOf("closed");
    return s.value("sandboxes", 0) == 1 && s["conditions"][0]["status"] == "True";
  })) << StatusOf("closed").dump();
  EXPECT_TRUE(Eventually([&] { return StatusOf("pypi").value("sandboxes", 0) == 2; }));

  // Labels change: b is selected too.
  auto b = store_->Get(api::SandboxKind(), "default", "b").value();
  b.metadata.labels["team"] = "x";
  ASSERT_TRUE(store_->Update(b).ok());
  EXPECT_TRUE(Eventually([&] { return AnnotationOf("b") == both; })) << AnnotationOf("b");

  // A policy deleted: what it added goes; the last one gone leaves no annotation.
  ASSERT_TRUE(store_->Delete(api::TrafficPolicyKind(), "default", "closed").ok());
  EXPECT_TRUE(Eventually([&] {
    return AnnotationOf("a") ==
           R"({"allowInternetAccess":true,"allowOut":["1.1.1.1/32","*.pypi.org"],"denyOut":[]})";
  })) << AnnotationOf("a");
  ASSERT_TRUE(store_->Delete(api::TrafficPolicyKind(), "default", "pypi").ok());
  EXPECT_TRUE(Eventually([&] { return AnnotationOf("a").empty() && AnnotationOf("b").empty(); }));
}

TEST_F(TrafficPolicyControllerTest, APolicyItCannotEnforceClosesItsSandboxesAndSaysWhy) {
  ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("a")).ok());
  // Admission takes the shape; the entry itself is read where it is enforced.
  ASSERT_TRUE(store_
                  ->Create(Policy(
                      "bad", R"(  egress: {rules: [{action: allow, to: [{cidr: 1.2.3.4/40}]}]})"))
                  .ok());
  EXPECT_TRUE(Eventually([&] {
    return AnnotationOf("a") == R"({"allowInternetAccess":false,"allowOut":[],"denyOut":[]})";
  })) << AnnotationOf("a");
  EXPECT_TRUE(Eventually([&] { return StatusOf("bad")["conditions"][0]["status"] == "False"; }));
  std::string message = StatusOf("bad")["conditions"][0]["message"];
  EXPECT_NE(message.find("spec.egress.rules[0].to[0]"), std::string::npos) << message;
  EXPECT_NE(message.find("egress is closed"), std::string::npos) << message;
}

TEST_F(TrafficPolicyControllerTest, PoliciesThatTogetherExceedTheNodesLimitsCloseTheSandbox) {
  ASSERT_TRUE(store_->Create(store::testing::MakeSandbox("a")).ok());
  for (int p = 0; p < 13; ++p) {  // 13 × 20 addresses: more than the 256 a node takes
    std::string peers;
    for (int i = 0; i < 20; ++i) peers += fmt::format("{}{{cidr: 1.{}.{}.1}}", i ? ", " : "", p, i);
    ASSERT_TRUE(store_
                    ->Create(Policy(
                        fmt::format("p{}", p),
                        fmt::format("  egress: {{rules: [{{action: allow, to: [{}]}}]}}", peers)))
                    .ok());
  }
  EXPECT_TRUE(Eventually([&] {
    return AnnotationOf("a") == R"({"allowInternetAccess":false,"allowOut":[],"denyOut":[]})";
  })) << AnnotationOf("a");
  EXPECT_TRUE(Eventually([&] { return StatusOf("p0")["conditions"][0]["status"] == "False"; }));
  std::string message = StatusOf("p0")["conditions"][0]["message"];
  EXPECT_NE(message.find("with the other policies selecting sandbox a"), std::string::npos)
      << message;
}

TEST(EgressOfTrafficPolicyTest, AllowPeersJoinAllowOutAndRejectCidrsJoinDenyOut) {
  auto e = EgressOfTrafficPolicy(Policy("p", R"(  egress: {rules: [
    {action: allow, to: [{cidr: 1.1.1.0/24}, {fqdn: Example.com}]},
    {action: reject, to: [{cidr: 0.0.0.0/0}]}]})"));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(
      sbnet::EgressPolicyToJson(*e).dump(),
      R"({"allowInternetAccess":true,"allowOut":["1.1.1.0/24","example.com"],"denyOut":["0.0.0.0/0"]})");
}

}  // namespace
}  // namespace warren::controller
