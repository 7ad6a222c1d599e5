#include "controller/image_pull_job_controller.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/image_pull_job.h"
#include "api/yaml_codec.h"
#include "base/testing/fake_clock.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

api::Object FromYaml(const std::string& doc) {
  return api::ObjectFromJson(*api::ParseYaml(doc)).value();
}

api::Object Job(std::string_view name, std::string_view yaml_spec) {
  return FromYaml(fmt::format(
      "apiVersion: apps.kruise.io/v1alpha1\nkind: ImagePullJob\nmetadata: {{name: {}, namespace: "
      "default}}\nspec:\n{}\n",
      name, yaml_spec));
}

api::Object Node(std::string_view name, std::string_view zone) {
  return FromYaml(fmt::format(
      "apiVersion: warren.dev/v1alpha1\nkind: Node\nmetadata: {{name: {}, labels: {{zone: {}}}}}\n",
      name, zone));
}

class ImagePullJobControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (auto [name, zone] : {std::pair{"n1", "a"}, {"n2", "a"}, {"n3", "b"}}) {
      ASSERT_TRUE(store_->Create(Node(name, zone)).ok());
    }
    ASSERT_TRUE(controller_.Start().ok());
  }

  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 500; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }
  api::ImagePullJobStatus StatusOf(const std::string& name) {
    auto o = store_->Get(api::ImagePullJobKind(), "default", name);
    if (!o.ok()) return {};
    return api::DecodeStatus<api::ImagePullJobStatus>(*o).value();
  }
  // What a node writes of itself.
  void NodeWrites(const std::string& job, const std::string& node, const std::string& phase) {
    for (int attempt = 0; attempt < 20; ++attempt) {
      auto o = store_->Get(api::ImagePullJobKind(), "default", job).value();
      auto status = api::DecodeStatus<api::ImagePullJobStatus>(o).value();
      std::erase_if(status.nodes, [&](const auto& n) { return n.name == node; });
      status.nodes.push_back({.name = node, .phase = phase});
      api::EncodeStatus(status, o);
      if (store_->Update(o, store::Subresource::kStatus).ok()) return;
    }
    FAIL() << "status write kept conflicting";
  }

  base::FakeClock clock_;
  store::testing::TempStore store_;
  ImagePullJobController controller_{store_.store(), clock_};
};

TEST_F(ImagePullJobControllerTest, TargetsFollowTheSelectorAndCountsFollowTheNodes) {
  ASSERT_TRUE(
      store_->Create(Job("zone-a", "  image: r:5000/app:1\n  selector: {matchLabels: {zone: a}}"))
          .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("zone-a").desired == 2; }));
  auto s = StatusOf("zone-a");
  EXPECT_EQ(s.target_nodes, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(s.message, "job is running, no progress");
  EXPECT_TRUE(s.start_time.has_value());
  EXPECT_FALSE(s.completion_time.has_value());

  NodeWrites("zone-a", "n1", "Pulling");
  ASSERT_TRUE(Eventually([&] { return StatusOf("zone-a").active == 1; }));
  NodeWrites("zone-a", "n1", "Succeeded");
  ASSERT_TRUE(Eventually([&] { return StatusOf("zone-a").succeeded == 1; }));
  EXPECT_EQ(StatusOf("zone-a").message, "job is running, progress 50.0%");
  NodeWrites("zone-a", "n2", "Failed");
  ASSERT_TRUE(Eventually([&] { return StatusOf("zone-a").completion_time.has_value(); }));
  s = StatusOf("zone-a");
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.failed_nodes, std::vector<std::string>{"n2"});
  EXPECT_EQ(s.message, "job has completed");

  // Names pick existing nodes only; no selector picks every node.
  ASSERT_TRUE(
      store_->Create(Job("named", "  image: r:5000/app:1\n  selector: {names: [n3, gone]}")).ok());
  ASSERT_TRUE(store_->Create(Job("all", "  image: r:5000/app:1")).ok());
  ASSERT_TRUE(
      Eventually([&] { return StatusOf("named").desired == 1 && StatusOf("all").desired == 3; }));
  EXPECT_EQ(StatusOf("named").target_nodes, std::vector<std::string>{"n3"});
}

TEST_F(ImagePullJobControllerTest, ANewNodeMatchingTheSelectorBecomesATarget) {
  ASSERT_TRUE(
      store_->Create(Job("j", "  image: r:5000/app:1\n  selector: {matchLabels: {zone: b}}")).ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("j").desired == 1; }));
  ASSERT_TRUE(store_->Create(Node("n4", "b")).ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("j").desired == 2; }));
}

TEST_F(ImagePullJobControllerTest, AJobWithNoTargetCompletesAtOnceAndNeverDoesNot) {
  ASSERT_TRUE(
      store_->Create(Job("none", "  image: r:5000/app:1\n  selector: {matchLabels: {zone: z}}"))
          .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("none").completion_time.has_value(); }));
  EXPECT_EQ(StatusOf("none").desired, 0);
  ASSERT_TRUE(store_
                  ->Create(Job("forever",
                               "  image: r:5000/app:1\n  selector: {names: [n1]}\n  "
                               "completionPolicy: {type: Never}"))
                  .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("forever").desired == 1; }));
  NodeWrites("forever", "n1", "Succeeded");
  ASSERT_TRUE(Eventually([&] { return StatusOf("forever").succeeded == 1; }));
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(StatusOf("forever").completion_time.has_value());
}

TEST_F(ImagePullJobControllerTest, TheDeadlineFailsUnfinishedNodesAndTheTtlDeletesTheJob) {
  ASSERT_TRUE(store_
                  ->Create(Job("slow",
                               "  image: r:5000/app:1\n  selector: {matchLabels: {zone: a}}\n"
                               "  pullPolicy: {timeoutSeconds: 5}\n"
                               "  completionPolicy: {activeDeadlineSeconds: 60, "
                               "ttlSecondsAfterFinished: 30}"))
                  .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("slow").desired == 2; }));
  NodeWrites("slow", "n1", "Succeeded");
  NodeWrites("slow", "n2", "Pulling");
  ASSERT_TRUE(Eventually([&] { return StatusOf("slow").active == 1; }));
  clock_.Advance(61s);
  // The deadline's requeue is in real time from the fake instant: nudge it with a change.
  ASSERT_TRUE(store_
                  ->Patch(api::ImagePullJobKind(), "default", "slow",
                          {{"metadata", {{"labels", {{"nudge", "1"}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] { return StatusOf("slow").completion_time.has_value(); }));
  auto s = StatusOf("slow");
  EXPECT_EQ(s.message, "job exceeds activeDeadlineSeconds");
  EXPECT_EQ(s.succeeded, 1);
  EXPECT_EQ(s.failed, 1);
  EXPECT_EQ(s.failed_nodes, std::vector<std::string>{"n2"});
  EXPECT_TRUE(store_->Get(api::ImagePullJobKind(), "default", "slow").ok());
  clock_.Advance(31s);
  ASSERT_TRUE(store_
                  ->Patch(api::ImagePullJobKind(), "default", "slow",
                          {{"metadata", {{"labels", {{"nudge", "2"}}}}}})
                  .ok());
  ASSERT_TRUE(Eventually([&] {
    return store_->Get(api::ImagePullJobKind(), "default", "slow").status().code() ==
           StatusCode::kNotFound;
  }));
}

}  // namespace
}  // namespace warren::controller
