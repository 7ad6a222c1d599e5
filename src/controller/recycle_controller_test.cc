#include "controller/recycle_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "base/time_format.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
namespace annotations = api::annotations;
using testing::Eventually;

// Plays the node agent's reset in unit tests: reports phase Recycling, then Running and Ready,
// as the node does around a real reset (tests/privileged/pool runs the real one).
class StatusOnlyResetter : public SandboxResetter {
 public:
  explicit StatusOnlyResetter(store::Store& store) : store_(store) {}
  Status Reset(const api::Object& sandbox, std::chrono::milliseconds) override {
    ++calls;
    if (fail) return UnavailableError("the runtime could not restart it");
    for (const char* phase : {"Recycling", "Running"}) {
      auto s = store_.Get(api::SandboxKind(), sandbox.metadata.namespace_, sandbox.metadata.name);
      if (!s.ok()) return s.status();
      s->status()["phase"] = phase;
      RETURN_IF_ERROR(store_.UpdateStatus(*s).status());
    }
    return Status::Ok();
  }
  std::atomic<int> calls{0};
  std::atomic<bool> fail{false};

 private:
  store::Store& store_;
};

class RecycleControllerTest : public testing::PoolControllerTest {
 protected:
  Status StartControllerUnderTest() override { return recycler_.Start(); }
  void StopControllerUnderTest() override { recycler_.Stop(); }

  void CreatePool(const std::string& name, int replicas, bool recycling) {
    api::Object set = store::testing::MakeSandboxSet(name, replicas);
    if (recycling) set.metadata.annotations[annotations::kCleanupEnabled] = "true";
    PoolControllerTest::CreatePool(set);
  }
  api::Object ClaimOne(const std::string& pool) {
    claim::ClaimRequest req;
    req.namespace_ = "default";
    req.pool = pool;
    req.owner = "alice";
    req.access_token = "alice-token";
    req.labels = {{"alice-label", "1"}};
    req.shutdown_time = base::RealClock().Now() + 1h;
    auto r = claimer_->Claim(req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r->sandbox;
  }
  std::optional<api::Object> Get(const std::string& name) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    if (!o.ok()) return std::nullopt;
    return *o;
  }

  StatusOnlyResetter resetter_{store_.store()};
  RecycleController recycler_{*informers_, &resetter_, nullptr, nullptr};
};

TEST_F(RecycleControllerTest, ADeletedClaimedSandboxReturnsToItsPoolWithoutItsUser) {
  CreatePool("py", 1, /*recycling=*/true);
  // Refills stay pending, so the recycled sandbox is the pool's one available member (a full
  // pool would scale the recycled one away first, as the reference does).
  node_->set_hold(true);
  api::Object used = ClaimOne("py");
  auto marked = DeleteOrRecycle(store_.store(), used);
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_TRUE(*marked);
  ASSERT_TRUE(Eventually([&] {
    auto s = Get(used.metadata.name);
    return s && s->metadata.labels.at(labels::kSandboxClaimed) == "false" &&
           s->status().value("recycledCount", 0) == 1;
  }));
  api::Object back = *Get(used.metadata.name);
  EXPECT_EQ(resetter_.calls, 1);
  ASSERT_NE(back.ControllerRef(), nullptr);
  EXPECT_EQ(back.ControllerRef()->name, "py");
  EXPECT_FALSE(back.metadata.labels.contains("alice-label"));
  EXPECT_FALSE(back.metadata.annotations.contains(annotations::kOwner));
  EXPECT_FALSE(back.metadata.annotations.contains(annotations::kCleanup));
  EXPECT_FALSE(back.spec().contains("shutdownTime"));
  // Same id, but a token alice never had.
  EXPECT_EQ(back.metadata.labels.at(labels::kSandboxId),
            used.metadata.labels.at(labels::kSandboxId));
  std::string token = *testing::TestSecrets().AccessToken(back);
  EXPECT_NE(token, "alice-token");
  EXPECT_EQ(token.size(), 64u);
  // And it can be claimed again.
  ASSERT_TRUE(Eventually([&] { return claimer_->index().Available("default", "py") >= 1; }));
}

TEST_F(RecycleControllerTest, WithoutRecyclingADeleteDeletes) {
  CreatePool("py", 1, /*recycling=*/false);
  api::Object used = ClaimOne("py");
  auto marked = DeleteOrRecycle(store_.store(), used);
  ASSERT_TRUE(marked.ok());
  EXPECT_FALSE(*marked);
  EXPECT_FALSE(Get(used.metadata.name).has_value());
}

TEST_F(RecycleControllerTest, AFailedResetDeletesTheSandbox) {
  CreatePool("py", 1, true);
  api::Object used = ClaimOne("py");
  resetter_.fail = true;
  ASSERT_TRUE(DeleteOrRecycle(store_.store(), used).ok());
  ASSERT_TRUE(Eventually([&] { return !Get(used.metadata.name).has_value(); }));
  auto events = store_->List(api::EventKind(), {});
  (void)events;
}

TEST_F(RecycleControllerTest, AFailedResetWithRetainOnFailureKeepsItForAWhile) {
  CreatePool("py", 1, true);
  api::Object used = ClaimOne("py");
  ASSERT_TRUE(store_
                  ->Patch(api::SandboxKind(), "default", used.metadata.name,
                          {{"metadata",
                            {{"annotations", {{annotations::kCleanupRetainOnFailure, "true"}}}}}})
                  .ok());
  resetter_.fail = true;
  auto latest = Get(used.metadata.name);
  ASSERT_TRUE(DeleteOrRecycle(store_.store(), *latest).ok());
  ASSERT_TRUE(Eventually([&] {
    auto s = Get(used.metadata.name);
    return s && !s->metadata.annotations.contains(annotations::kCleanup);
  }));
  auto s = *Get(used.metadata.name);
  auto shutdown = base::ParseRfc3339(s.spec()["shutdownTime"].get<std::string>());
  ASSERT_TRUE(shutdown);
  EXPECT_GT(*shutdown, base::RealClock().Now() + 4min);
}

TEST_F(RecycleControllerTest, AnOutdatedRevisionIsDeletedNotRecycled) {
  CreatePool("py", 1, true);
  api::Object used = ClaimOne("py");
  ASSERT_TRUE(
      store_
          ->Patch(api::SandboxSetKind(), "default", "py",
                  {{"spec",
                    {{"template",
                      {{"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}}}}}})
          .ok());
  // The controller judges from its informer's copy of the set, which follows the store by a
  // watch event: wait for that copy, not the store's.
  ASSERT_TRUE(Eventually([&] {
    auto set = informers_->sets().Get("default", "py");
    return set && set->status().is_object() && set->status().value("observedGeneration", 0) == 2;
  }));
  ASSERT_TRUE(DeleteOrRecycle(store_.store(), *Get(used.metadata.name)).ok());
  ASSERT_TRUE(Eventually([&] { return !Get(used.metadata.name).has_value(); }));
  EXPECT_EQ(resetter_.calls, 0);
}

TEST_F(RecycleControllerTest, AMemberUpdatedInPlaceIsDeletedNotRecycled) {
  CreatePool("py", 1, true);
  api::Object used = ClaimOne("py");
  // What a claim-time in-place update leaves: the pool's template inline, with another image.
  ASSERT_TRUE(
      store_
          ->Patch(api::SandboxKind(), "default", used.metadata.name,
                  {{"spec",
                    {{"templateRef", nullptr},
                     {"template",
                      {{"spec", {{"containers", {{{"name", "main"}, {"image", "busybox"}}}}}}}}}}})
          .ok());
  auto marked = DeleteOrRecycle(store_.store(), *Get(used.metadata.name));
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_FALSE(*marked) << "deleted at once, not marked for recycling";
  ASSERT_TRUE(Eventually([&] { return !Get(used.metadata.name).has_value(); }));
  EXPECT_EQ(resetter_.calls, 0);
}

}  // namespace
}  // namespace warren::controller
