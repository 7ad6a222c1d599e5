#include "controller/advanced_cron_job_controller.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/advanced_cron_job.h"
#include "api/types/image_pull_job.h"
#include "api/yaml_codec.h"
#include "base/testing/fake_clock.h"
#include "base/time_format.h"
#include "store/testing/delivery_gate.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

api::Object CronJob(std::string_view name, std::string_view yaml_spec) {
  std::string doc = fmt::format(
      "apiVersion: apps.kruise.io/v1alpha1\nkind: AdvancedCronJob\nmetadata: {{name: {}, "
      "namespace: default}}\nspec:\n{}\n",
      name, yaml_spec);
  return api::ObjectFromJson(*api::ParseYaml(doc)).value();
}

constexpr char kPullEvery5[] = R"(  schedule: "*/5 * * * *"
  template:
    imagePullJobTemplate:
      metadata: {labels: {purpose: prewarm}}
      spec: {image: "reg:5000/app:1", parallelism: 0})";

// The fake clock starts at the real now (the store stamps creation with the real clock), moved
// back to just after a five-minute boundary so the first firing is a known instant. Within a few
// seconds of the next boundary it waits for that to pass: a job created after it (by the real
// clock) would miss the first firing the tests expect.
base::WallTime StartInstant() {
  auto now = base::RealClock().Now();
  auto boundary = [](base::WallTime t) {
    auto m = std::chrono::floor<std::chrono::minutes>(t);
    return m - (m.time_since_epoch() % std::chrono::minutes(5));
  };
  if (auto next = boundary(now) + 5min; next - now < 5s) {
    std::this_thread::sleep_for(next - now + 10ms);
    now = base::RealClock().Now();
  }
  return boundary(now) + 1s;
}

class AdvancedCronJobControllerTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(controller_.Start().ok()); }

  bool Eventually(const std::function<bool()>& done) {
    for (int i = 0; i < 300; ++i) {
      if (done()) return true;
      std::this_thread::sleep_for(10ms);
    }
    return done();
  }
  std::vector<api::Object> Children() {
    return store_->List(api::ImagePullJobKind(), {}).value().items;
  }
  api::AdvancedCronJobStatus StatusOf(const std::string& name) {
    auto o = store_->Get(api::AdvancedCronJobKind(), "default", name);
    return api::DecodeStatus<api::AdvancedCronJobStatus>(*o).value();
  }
  // Moves to `offset` past the creation instant and lets the controller look.
  void At(std::chrono::seconds offset) {
    clock_.Advance(start_ + offset - clock_.Now());
    controller_.Resync();
    std::this_thread::sleep_for(50ms);
  }
  void Finish(const std::string& child, bool ok) {
    auto o = store_->Get(api::ImagePullJobKind(), "default", child).value();
    api::ImagePullJobStatus st;
    st.desired = 1;
    (ok ? st.succeeded : st.failed) = 1;
    st.completion_time = clock_.Now();
    api::EncodeStatus(st, o);
    ASSERT_TRUE(store_->Update(o, store::Subresource::kStatus).ok());
  }
  // Holds the store's watch delivery from the cron job's creation event on, fires the job at 5
  // and 10 minutes, then lets delivery go on.
  void FireTwiceWhileTheFirstChildIsUndelivered(const std::string& policy) {
    const std::string name = "late";
    auto child_at = [&](std::chrono::seconds offset) {
      const base::WallTime t = start_ - 1s + offset;
      return fmt::format(
          "{}-{}", name,
          std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
    };
    auto owned = [&] {
      std::vector<std::string> out;
      for (const auto& c : Children()) out.push_back(c.metadata.name);
      return out;
    };
    store::testing::DeliveryGate gate(
        store_.store(), api::AdvancedCronJobKind(),
        [](const store::WatchEvent& e) { return e.type == store::EventType::kAdded; });
    ASSERT_TRUE(
        store_->Create(CronJob(name, std::string(kPullEvery5) + "\n  concurrencyPolicy: " + policy))
            .ok());
    ASSERT_TRUE(gate.WaitHeld(3s));
    At(5min);
    ASSERT_TRUE(Eventually([&] { return StatusOf(name).active.size() == 1; }));
    At(10min);  // the informers still have not seen the first child
    if (policy == "Replace") {
      ASSERT_TRUE(Eventually(
          [&] { return StatusOf(name).active == std::vector<std::string>{child_at(10min)}; }));
    } else {
      ASSERT_TRUE(
          Eventually([&] { return StatusOf(name).message.find("waits") != std::string::npos; }));
    }
    gate.Release();
    const std::string survivor = child_at(policy == "Replace" ? 10min : 5min);
    ASSERT_TRUE(Eventually([&] { return owned() == std::vector<std::string>{survivor}; }));
    controller_.Resync();
    std::this_thread::sleep_for(100ms);
    EXPECT_EQ(owned(), std::vector<std::string>{survivor});
  }
  static std::string NameAt(base::WallTime t) {
    return fmt::format(
        "pull-{}", std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  }

  base::WallTime start_ = StartInstant();
  base::FakeClock clock_{start_};
  store::testing::TempStore store_;
  AdvancedCronJobController controller_{store_.store(), clock_};
};

TEST_F(AdvancedCronJobControllerTest, FiresAtTheScheduledMinuteNotBeforeAndNamesTheChild) {
  ASSERT_TRUE(store_->Create(CronJob("pull", kPullEvery5)).ok());
  At(4min + 58s);  // 1 s before the first firing (start_ is 1 s past a boundary)
  EXPECT_TRUE(Children().empty());
  const base::WallTime first = start_ - 1s + 5min;
  At(5min);
  ASSERT_TRUE(Eventually([&] { return Children().size() == 1; }));
  api::Object child = Children()[0];
  EXPECT_EQ(child.metadata.name, NameAt(first));
  EXPECT_EQ(child.metadata.labels["purpose"], "prewarm");
  EXPECT_EQ(child.metadata.annotations["apps.kruise.io/scheduled-at"], base::FormatRfc3339(first));
  ASSERT_EQ(child.metadata.owner_references.size(), 1u);
  EXPECT_EQ(child.metadata.owner_references[0].name, "pull");
  EXPECT_EQ(child.spec()["image"], "reg:5000/app:1");
  ASSERT_TRUE(Eventually([&] { return StatusOf("pull").last_schedule_time == first; }));
  EXPECT_EQ(StatusOf("pull").active, std::vector<std::string>{NameAt(first)});
  EXPECT_EQ(StatusOf("pull").type, "ImagePullJob");
}

TEST_F(AdvancedCronJobControllerTest, HistoryLimitsTrimAndATrimmedSlotNeverFiresAgain) {
  ASSERT_TRUE(
      store_
          ->Create(CronJob("pull", std::string(kPullEvery5) + "\n  successfulJobsHistoryLimit: 1\n"
                                                              "  failedJobsHistoryLimit: 0"))
          .ok());
  for (int i = 1; i <= 3; ++i) {
    At(std::chrono::seconds(i * 300));
    std::string name = NameAt(start_ - 1s + i * 5min);
    ASSERT_TRUE(Eventually([&] {
      for (const auto& c : Children()) {
        if (c.metadata.name == name) return true;
      }
      return false;
    })) << i;
    Finish(name, /*ok=*/i != 2);
  }
  controller_.Resync();
  // Successes keep the newest one; the failure is gone at once.
  ASSERT_TRUE(Eventually([&] { return Children().size() == 1; }));
  EXPECT_EQ(Children()[0].metadata.name, NameAt(start_ - 1s + 15min));
  // Looking again at the same instant fires nothing new: the slot is remembered, not its child.
  controller_.Resync();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Children().size(), 1u);
}

TEST_F(AdvancedCronJobControllerTest, ForbidWaitsReplaceDeletesTheUnfinished) {
  ASSERT_TRUE(
      store_->Create(CronJob("pull", std::string(kPullEvery5) + "\n  concurrencyPolicy: Forbid"))
          .ok());
  At(5min);
  ASSERT_TRUE(Eventually([&] { return Children().size() == 1; }));
  At(10min);  // the first is still running
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(Children().size(), 1u);
  EXPECT_NE(StatusOf("pull").message.find("waits"), std::string::npos) << StatusOf("pull").message;
  Finish(NameAt(start_ - 1s + 5min), true);  // finishing it lets the due firing run
  ASSERT_TRUE(Eventually([&] { return Children().size() == 2; }));

  ASSERT_TRUE(store_->Create(CronJob("swap", std::string(kPullEvery5).replace(0, 0, ""))).ok());
  At(15min);  // swap (Replace, the default for pulls) fires for the first time
  auto owned_by_swap = [&] {
    std::vector<std::string> out;
    for (const auto& c : Children()) {
      if (c.metadata.owner_references[0].name == "swap") out.push_back(c.metadata.name);
    }
    return out;
  };
  ASSERT_TRUE(Eventually([&] { return owned_by_swap().size() == 1; }));
  std::string first = owned_by_swap()[0];
  At(20min);
  ASSERT_TRUE(
      Eventually([&] { return owned_by_swap().size() == 1 && owned_by_swap()[0] != first; }));
}

// The store delivers every watch on one thread, so a subscriber that holds an event holds the
// controller's informers too: the child the first firing creates stays unseen by them while the
// next firing falls due. Replace must still delete it, and Forbid must still wait for it.
TEST_F(AdvancedCronJobControllerTest, ReplaceDeletesAChildTheInformerHasNotDeliveredYet) {
  FireTwiceWhileTheFirstChildIsUndelivered("Replace");
}

TEST_F(AdvancedCronJobControllerTest, ForbidWaitsForAChildTheInformerHasNotDeliveredYet) {
  FireTwiceWhileTheFirstChildIsUndelivered("Forbid");
}

// A pass that created a child but could not record it (its status write failed) leaves the next
// pass an AlreadyExists: that child is the firing's and is recorded, so Replace still finds it
// while the informer has not delivered it.
TEST_F(AdvancedCronJobControllerTest, AChildThatAlreadyExistsIsRecordedAsTheFiringsOwn) {
  ASSERT_TRUE(store_->Create(CronJob("pull", kPullEvery5)).ok());  // Replace: the default
  const api::Object cron = store_->Get(api::AdvancedCronJobKind(), "default", "pull").value();
  store::testing::DeliveryGate gate(
      store_.store(), api::AdvancedCronJobKind(),
      [](const store::WatchEvent& e) { return e.object->metadata.name == "hold"; });
  ASSERT_TRUE(store_->Create(CronJob("hold", std::string(kPullEvery5) + "\n  paused: true")).ok());
  ASSERT_TRUE(gate.WaitHeld(3s));
  const std::string first = NameAt(start_ - 1s + 5min);
  api::Object child =
      api::ObjectFromJson(
          *api::ParseYaml("apiVersion: apps.kruise.io/v1alpha1\nkind: ImagePullJob\nmetadata: "
                          "{name: " +
                          first + ", namespace: default}\nspec: {image: \"reg:5000/app:1\"}\n"))
          .value();
  child.metadata.owner_references.push_back(cron.MakeControllerRef());
  ASSERT_TRUE(store_->Create(child).ok());

  At(5min);
  ASSERT_TRUE(Eventually([&] {
    return StatusOf("pull").active == std::vector<std::string>{first};
  })) << StatusOf("pull").message;
  At(10min);
  const std::string second = NameAt(start_ - 1s + 10min);
  ASSERT_TRUE(
      Eventually([&] { return StatusOf("pull").active == std::vector<std::string>{second}; }));
  gate.Release();
  ASSERT_TRUE(Eventually([&] {
    auto children = Children();
    return children.size() == 1 && children[0].metadata.name == second;
  }));
}

TEST_F(AdvancedCronJobControllerTest, AReplicasTemplateSizesThePoolInItsTimeZone) {
  ASSERT_TRUE(store_->Create(store::testing::MakeSandboxSet("pool", 1)).ok());
  // 09:00 in Tokyo is 00:00 UTC; with the clock put just before a UTC midnight.
  ASSERT_TRUE(store_
                  ->Create(CronJob("busy", R"(  schedule: "0 9 * * *"
  timeZone: Asia/Tokyo
  template:
    sandboxSetReplicasTemplate: {name: pool, replicas: 7})"))
                  .ok());
  auto midnight = std::chrono::ceil<std::chrono::days>(clock_.Now());
  clock_.Advance(midnight - 2s - clock_.Now());
  controller_.Resync();
  std::this_thread::sleep_for(100ms);
  EXPECT_EQ(store_->Get(api::SandboxSetKind(), "default", "pool")->spec()["replicas"], 1);
  clock_.Advance(3s);
  controller_.Resync();
  ASSERT_TRUE(Eventually([&] {
    return store_->Get(api::SandboxSetKind(), "default", "pool")->spec()["replicas"] == 7;
  }));
  // The pool is written before the job's status: wait for the status too.
  ASSERT_TRUE(Eventually([&] { return StatusOf("busy").last_schedule_time.has_value(); }));
  EXPECT_EQ(StatusOf("busy").type, "SandboxSetReplicas");
  EXPECT_EQ(StatusOf("busy").last_schedule_time, midnight);
}

}  // namespace
}  // namespace warren::controller
