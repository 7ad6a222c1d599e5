#include "controller/claim/pool_claimer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <thread>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "base/time_format.h"
#include "controller/claim/claim_metadata.h"
#include "controller/sandboxset_controller.h"
#include "controller/testing/eventually.h"
#include "controller/testing/pool_fixture.h"
#include "controller/testing/pool_test_node.h"
#include "controller/testing/test_nodes.h"
#include "obs/metrics.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::controller::claim {
namespace {

using namespace std::chrono_literals;
namespace labels = api::labels;
namespace annotations = api::annotations;
using controller::testing::Eventually;

// One server's worth of pool machinery over a shared store.
struct PoolStack {
  explicit PoolStack(store::Store& store, bool with_controller = true)
      : informers(store, controller::testing::TestSecrets()),
        claimer(informers, nullptr, [this](const api::Object& s) {
          std::lock_guard lock(mu);
          routed.push_back(s.metadata.name);
        }) {
    if (with_controller) controller = std::make_unique<SandboxSetController>(informers, nullptr);
    CHECK_OK(informers.Start());
    if (controller) CHECK_OK(controller->Start());
  }
  ~PoolStack() {
    claimer.Stop();
    if (controller) controller->Stop();
    informers.Stop();
  }
  PoolInformers informers;
  PoolClaimer claimer;
  std::unique_ptr<SandboxSetController> controller;
  std::mutex mu;
  std::vector<std::string> routed;
};

class PoolClaimerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    stack_ = std::make_unique<PoolStack>(store_.store());
    node_ = std::make_unique<controller::testing::PoolTestNode>(store_.store());
  }
  void TearDown() override {
    stack_.reset();
    node_.reset();
  }
  void CreatePool(const std::string& name, int replicas) {
    ASSERT_TRUE(store_->Create(store::testing::MakeSandboxSet(name, replicas)).ok());
    ASSERT_TRUE(Eventually([&] {
      return stack_->claimer.index().Available("default", name) == static_cast<size_t>(replicas);
    }));
  }
  ClaimRequest Request(const std::string& pool, const std::string& owner = "team-a") {
    ClaimRequest r;
    r.namespace_ = "default";
    r.pool = pool;
    r.owner = owner;
    r.access_token = "tok-" + owner;
    return r;
  }
  api::Object Get(const std::string& name) {
    auto o = store_->Get(api::SandboxKind(), "default", name);
    EXPECT_TRUE(o.ok()) << name << ": " << o.status();
    return o.ok() ? *o : api::Object{};
  }

  store::testing::TempStore store_;
  std::unique_ptr<PoolStack> stack_;
  std::unique_ptr<controller::testing::PoolTestNode> node_;
};

TEST_F(PoolClaimerTest, AClaimDetachesOneMemberAndCommitsIt) {
  CreatePool("py", 3);
  ClaimRequest req = Request("py");
  req.labels = {{"app", "agent"}};
  req.annotations = {{"e2b.dev/metadata-user", "alice"}};
  req.env_vars = {{"FOO", "bar"}};
  req.shutdown_time = base::RealClock().Now() + 300s;
  auto r = stack_->claimer.Claim(req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->from_pool);
  EXPECT_EQ(r->lock_type, "update");

  api::Object s = Get(r->sandbox.metadata.name);
  EXPECT_EQ(s.metadata.resource_version, r->sandbox.metadata.resource_version);
  EXPECT_TRUE(s.metadata.owner_references.empty());
  EXPECT_EQ(s.metadata.labels.at(labels::kSandboxClaimed), "true");
  EXPECT_EQ(s.metadata.labels.at(labels::kSandboxPool), "py");
  EXPECT_EQ(s.metadata.labels.at("app"), "agent");
  EXPECT_EQ(s.metadata.annotations.at("e2b.dev/metadata-user"), "alice");
  EXPECT_EQ(s.metadata.annotations.at(annotations::kOwner), "team-a");
  const api::SandboxSecrets& secrets = controller::testing::TestSecrets();
  EXPECT_EQ(*secrets.AccessToken(s), "tok-team-a");
  // Sealed: a reader of the object does not see the token or the env.
  std::string text = api::ObjectToJsonText(s);
  EXPECT_EQ(text.find("tok-team-a"), std::string::npos);
  EXPECT_EQ(text.find("bar"), std::string::npos);
  EXPECT_FALSE(s.metadata.annotations.at(annotations::kLock).empty());
  EXPECT_TRUE(base::ParseRfc3339(s.metadata.annotations.at(annotations::kClaimTimestamp)));
  EXPECT_FALSE(s.metadata.annotations.contains(pool_annotations::kClaimPending));
  auto init = api::ParseJson(*secrets.InitRequest(s));
  ASSERT_TRUE(init.ok());
  EXPECT_EQ((*init)["envVars"]["FOO"], "bar");
  EXPECT_EQ((*init)["accessToken"], "tok-team-a");
  EXPECT_TRUE(s.spec().contains("shutdownTime"));
  {
    std::lock_guard lock(stack_->mu);
    EXPECT_THAT(stack_->routed, ::testing::ElementsAre(s.metadata.name));
  }
  // The pool refills behind the claim.
  ASSERT_TRUE(Eventually([&] { return stack_->claimer.index().Available("default", "py") == 3; }));
}

TEST_F(PoolClaimerTest, SixtyFourConcurrentClaimsNeverShareASandbox) {
  // Two servers' claimers (separate caches and indexes) race over one store: only the
  // store's compare-and-swap keeps them apart.
  PoolStack second(store_.store(), /*with_controller=*/false);
  CreatePool("py", 64);
  ASSERT_TRUE(Eventually([&] { return second.claimer.index().Available("default", "py") == 64; }));
  std::mutex mu;
  std::map<std::string, std::string> winner;  // sandbox → owner that got it
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int i = 0; i < 64; ++i) {
    threads.emplace_back([&, i] {
      PoolClaimer& c = i % 2 ? second.claimer : stack_->claimer;
      ClaimRequest req = Request("py", "owner-" + std::to_string(i));
      req.create_on_no_stock = false;
      req.timeout = 30s;
      auto r = c.Claim(req);
      std::lock_guard lock(mu);
      if (!r.ok()) {
        errors.push_back(r.status().ToString());
        return;
      }
      auto [it, inserted] = winner.emplace(r->sandbox.metadata.name, req.owner);
      if (!inserted) errors.push_back("handed out twice: " + r->sandbox.metadata.name);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_THAT(errors, ::testing::IsEmpty());
  EXPECT_EQ(winner.size(), 64u);
  // The store agrees: each sandbox is claimed by the owner its claim returned it to.
  for (const auto& [name, owner] : winner) {
    api::Object s = Get(name);
    EXPECT_EQ(s.metadata.annotations[annotations::kOwner], owner) << name;
    EXPECT_EQ(s.metadata.labels[labels::kSandboxClaimed], "true") << name;
  }
}

TEST_F(PoolClaimerTest, AnEmptyPoolCreatesOnDemand) {
  CreatePool("empty", 0);
  auto r = stack_->claimer.Claim(Request("empty"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->from_pool);
  EXPECT_EQ(r->lock_type, "create");
  api::Object s = Get(r->sandbox.metadata.name);
  EXPECT_EQ(s.metadata.labels.at(labels::kSandboxClaimed), "true");
  EXPECT_TRUE(s.metadata.owner_references.empty());
  EXPECT_FALSE(s.metadata.annotations.contains(pool_annotations::kClaimPending));
  EXPECT_TRUE(IsRunningAndReady(s));
}

TEST_F(PoolClaimerTest, WithoutCreateOnNoStockAClaimWaitsForStock) {
  CreatePool("py", 0);
  ClaimRequest req = Request("py");
  req.create_on_no_stock = false;
  req.timeout = 300ms;
  auto r = stack_->claimer.Claim(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();
  EXPECT_THAT(r.status().message(),
              ::testing::HasSubstr("no sandbox available in pool default/py"));

  req.timeout = 20s;
  std::thread scale([&] {
    std::this_thread::sleep_for(100ms);
    ASSERT_TRUE(
        store_->Patch(api::SandboxSetKind(), "default", "py", {{"spec", {{"replicas", 1}}}}).ok());
  });
  auto later = stack_->claimer.Claim(req);
  scale.join();
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(later->from_pool);
}

TEST_F(PoolClaimerTest, MembersOnANodeThatIsNotReadyAreNeverHandedOut) {
  // PoolTestNode runs every member on test-node.
  controller::testing::PutNode(store_.store(), {.name = "test-node"});
  CreatePool("py", 3);
  // The node lifecycle controller's mark of a node that stopped renewing.
  controller::testing::PutNode(store_.store(), {.name = "test-node", .ready = "Unknown"});
  ASSERT_TRUE(Eventually([&] { return stack_->claimer.index().Available("default", "py") == 0; }));
  ClaimRequest req = Request("py");
  req.create_on_no_stock = false;
  req.timeout = 300ms;
  auto r = stack_->claimer.Claim(req);
  ASSERT_FALSE(r.ok()) << r->sandbox.metadata.name;
  EXPECT_EQ(r.status().code(), StatusCode::kResourceExhausted) << r.status();

  // Ready again: the members are stock again.
  controller::testing::PutNode(store_.store(), {.name = "test-node"});
  ASSERT_TRUE(Eventually([&] { return stack_->claimer.index().Available("default", "py") == 3; }));
  req.timeout = 5s;
  auto later = stack_->claimer.Claim(req);
  ASSERT_TRUE(later.ok()) << later.status();
  EXPECT_TRUE(later->from_pool);
}

TEST_F(PoolClaimerTest, BadRequestsAreRefusedWithTheirReason) {
  auto r = stack_->claimer.Claim(Request("nope"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("SandboxSet default/nope not found"));
  ClaimRequest no_pool = Request("");
  EXPECT_EQ(stack_->claimer.Claim(no_pool).status().code(), StatusCode::kInvalidArgument);
  ClaimRequest zero = Request("py");
  zero.timeout = 0ms;
  EXPECT_EQ(stack_->claimer.Claim(zero).status().code(), StatusCode::kInvalidArgument);
}

TEST_F(PoolClaimerTest, AColdCreateThatNeverBecomesReadyIsDeleted) {
  CreatePool("py", 0);
  node_->set_hold(true);
  ClaimRequest req = Request("py");
  req.wait_ready_timeout = 300ms;
  auto r = stack_->claimer.Claim(req);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("was not ready within"));
  ASSERT_TRUE(Eventually([&] {
    auto list = store_->List(api::SandboxKind(), {});
    return list.ok() && list->items.empty();
  }));
}

TEST_F(PoolClaimerTest, AnAbandonedClaimGoesBackToItsPool) {
  CreatePool("py", 2);
  // Without the set controller: it would refill behind the detached member and then, once the
  // rollback returns it, scale the pool back down oldest first, deleting the very sandbox this
  // test inspects (the reference's order, covered by the controller's own tests).
  stack_->controller->Stop();
  // A claim that stopped between its compare-and-swap and its commit, made by an earlier run of
  // the server (claimed before this claimer started).
  auto members = store_->List(api::SandboxKind(), {});
  ASSERT_EQ(members->items.size(), 2u);
  api::Object m = members->items[0];
  ClaimRequest req = Request("py", "ghost");
  req.labels = {{"user-label", "x"}};
  auto long_ago = base::RealClock().Now() - 1h;
  ApplyClaim(m, req, "lock-of-a-dead-process", long_ago, base::RealClock().Now() + 1h,
             controller::testing::TestSecrets());
  ASSERT_TRUE(store_->Update(m).ok());
  ASSERT_TRUE(Eventually([&] { return stack_->claimer.RollBackAbandonedClaims() == 1; }));

  api::Object back = Get(m.metadata.name);
  EXPECT_EQ(back.metadata.labels.at(labels::kSandboxClaimed), "false");
  EXPECT_FALSE(back.metadata.labels.contains("user-label"));
  ASSERT_NE(back.ControllerRef(), nullptr);
  EXPECT_EQ(back.ControllerRef()->name, "py");
  for (const char* key : {annotations::kLock, annotations::kOwner, annotations::kSealedAccessToken,
                          annotations::kSealedInitRequest, pool_annotations::kClaimPending}) {
    EXPECT_FALSE(back.metadata.annotations.contains(key)) << key;
  }
  ASSERT_TRUE(Eventually([&] { return stack_->claimer.index().Available("default", "py") == 2; }));
}

TEST_F(PoolClaimerTest, AClaimStillWithinItsDeadlineIsLeftAlone) {
  CreatePool("py", 1);
  auto members = store_->List(api::SandboxKind(), {});
  api::Object m = members->items[0];
  // Claimed now by another live server (not this one's claim): its deadline rules.
  ApplyClaim(m, Request("py", "other"), "lock-of-another-server", base::RealClock().Now() + 60s,
             base::RealClock().Now() + 1h, controller::testing::TestSecrets());
  ASSERT_TRUE(store_->Update(m).ok());
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(stack_->claimer.RollBackAbandonedClaims(), 0);
  EXPECT_EQ(Get(m.metadata.name).metadata.labels.at(labels::kSandboxClaimed), "true");
}

TEST_F(PoolClaimerTest, ClaimsAreCountedByResultAndLockType) {
  // A pool name of its own: the registry is process-wide (and tests may repeat).
  static int run = 0;
  std::string pool = "counted" + std::to_string(run++);
  CreatePool(pool, 1);
  ASSERT_TRUE(stack_->claimer.Claim(Request(pool)).ok());
  std::string text = obs::Metrics::Default().Exposition();
  EXPECT_THAT(text,
              ::testing::HasSubstr(
                  "sandbox_claim_total{source=\"e2b\",lock_type=\"update\",namespace=\"default\","
                  "result=\"success\"}"));
  EXPECT_THAT(text,
              ::testing::HasSubstr("sandboxset_sandboxes_claimed_total{source=\"k8s\",name=\"" +
                                   pool + "\",namespace=\"default\"} 1"));
  EXPECT_THAT(text, ::testing::HasSubstr("warren_claim_duration_seconds_bucket"));
}

}  // namespace
}  // namespace warren::controller::claim
