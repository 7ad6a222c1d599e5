#include "gateway/route_sync.h"

#include <gtest/gtest.h>

#include <thread>

#include "api/kinds.h"
#include "api/types/labels.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::gateway {
namespace {

using namespace std::chrono_literals;
using store::testing::MakeSandbox;
using store::testing::TempStore;

const api::SandboxSecrets& Secrets() {
  static const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  return secrets;
}

// Polls until `pred` holds (watch events arrive on the store's thread).
template <typename Pred>
bool Eventually(Pred pred, std::chrono::milliseconds timeout = 10s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(5ms);
  }
  return pred();
}

class RouteSyncTest : public ::testing::Test {
 protected:
  // A Sandbox with the id label (and annotation), an envd token, and status.phase `phase`.
  api::Object CreateSandbox(const std::string& name, const std::string& id,
                            const std::string& phase, const std::string& token = "secret") {
    api::Object o = MakeSandbox(name, {{api::labels::kSandboxId, id}});
    o.metadata.annotations[api::annotations::kSandboxId] = id;
    if (!token.empty()) Secrets().SetAccessToken(o, token);
    auto created = store_->Create(o);
    EXPECT_TRUE(created.ok()) << created.status();
    return phase.empty() ? *created : SetPhase(*created, phase);
  }
  api::Object SetPhase(api::Object o, const std::string& phase) {
    o.status()["phase"] = phase;
    auto updated = store_->UpdateStatus(o);
    EXPECT_TRUE(updated.ok()) << updated.status();
    return *updated;
  }
  std::optional<RouteState> StateOf(const std::string& id) {
    auto r = table_.Lookup(id);
    if (!r) return std::nullopt;
    return r->route->state;
  }

  TempStore store_;
  RouteTable table_;
};

TEST_F(RouteSyncTest, RouteFromSandboxMapsPhasesTokenAndAutoResume) {
  api::Object o = MakeSandbox("a", {{api::labels::kSandboxId, "iaaa"}});
  o.metadata.uid = "uid-1";
  o.metadata.resource_version = 42;
  Secrets().SetAccessToken(o, "tok");
  o.metadata.annotations[kAutoResumeAnnotation] = "true";
  struct Case {
    const char* phase;
    RouteState state;
  };
  for (Case c : {Case{"Running", RouteState::kRunning}, Case{"Paused", RouteState::kPaused},
                 Case{"Resuming", RouteState::kPaused}, Case{"Pending", RouteState::kGone},
                 Case{"Failed", RouteState::kGone}, Case{"Recycling", RouteState::kGone},
                 Case{"", RouteState::kGone}}) {
    o.status()["phase"] = c.phase;
    auto r = RouteFromSandbox(o, Secrets());
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->state, c.state) << c.phase;
  }
  o.status()["phase"] = "Running";
  auto r = RouteFromSandbox(o, Secrets());
  EXPECT_EQ(r->sandbox_id, "iaaa");
  EXPECT_EQ(r->uid, "uid-1");
  EXPECT_EQ(r->resource_version, 42);
  EXPECT_EQ(r->access_token, "tok");
  EXPECT_TRUE(r->auto_resume);
  // A pause under way stops routing before the phase says so; so does a deletion.
  o.spec()["paused"] = true;
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kPaused);
  o.spec()["paused"] = "yes";  // not a boolean: ignored, not thrown on
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kRunning);
  o.metadata.deletion_timestamp = base::WallTime{};
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kGone);
  // The annotation stands in for a missing label; neither is an error naming the object.
  o.metadata.labels.clear();
  o.metadata.annotations[api::annotations::kSandboxId] = "ibbb";
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->sandbox_id, "ibbb");
  o.metadata.annotations.clear();
  auto none = RouteFromSandbox(o, Secrets());
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("default/a"), std::string::npos) << none.status();
}

TEST_F(RouteSyncTest, AnUnclaimedPoolMemberIsClosedAndAClaimedOneIsRunning) {
  api::Object o = MakeSandbox("m", {{api::labels::kSandboxId, "imember"},
                                    {api::labels::kSandboxPool, "py"},
                                    {api::labels::kSandboxClaimed, "false"}});
  o.status()["phase"] = "Running";
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kClosed);
  o.metadata.labels.erase(api::labels::kSandboxClaimed);
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kClosed);
  o.metadata.labels[api::labels::kSandboxClaimed] = "true";
  EXPECT_EQ(RouteFromSandbox(o, Secrets())->state, RouteState::kRunning);
}

TEST_F(RouteSyncTest, ATokenThatDoesNotOpenClosesTheSandboxInsteadOfOpeningIt) {
  api::Object o = MakeSandbox("a", {{api::labels::kSandboxId, "iaaa"}});
  o.status()["phase"] = "Running";
  // Sealed by another install, or copied from another object.
  api::SandboxSecrets other(base::SealedBox::ForTesting("another install"));
  other.SetAccessToken(o, "tok");
  auto r = RouteFromSandbox(o, Secrets());
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->access_token.size(), 64u);
  EXPECT_NE(r->access_token, "tok");
}

TEST_F(RouteSyncTest, ListsFirstThenFollowsTheWatch) {
  CreateSandbox("running", "irunning", "Running", "tok-1");
  api::Object pending = CreateSandbox("pending", "ipending", "");
  // Admission gives every Sandbox a sandbox id (contracts.md); with no phase it routes nowhere.
  store_->Create(MakeSandbox("no-id")).value();
  auto sync = RouteSync::Start(store_.store(), Secrets(), table_);
  ASSERT_TRUE(sync.ok()) << sync.status();
  // Start returns with the list in the table.
  EXPECT_EQ(StateOf("irunning"), RouteState::kRunning);
  EXPECT_EQ(table_.Lookup("irunning")->route->access_token, "tok-1");
  EXPECT_EQ(StateOf("ipending"), RouteState::kGone);
  EXPECT_EQ(table_.Stats().running + table_.Stats().gone, 3u);

  api::Object running = SetPhase(pending, "Running");
  EXPECT_TRUE(Eventually([&] { return StateOf("ipending") == RouteState::kRunning; }));
  running.spec()["paused"] = true;
  running = store_->Update(running).value();
  EXPECT_TRUE(Eventually([&] { return StateOf("ipending") == RouteState::kPaused; }));

  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "pending").ok());
  EXPECT_TRUE(Eventually([&] { return !table_.Lookup("ipending"); }));
  EXPECT_TRUE(table_.Lookup("irunning"));
  auto stats = (*sync)->Stats();
  EXPECT_GE(stats.applied, 3u);
  EXPECT_GE(stats.revision, running.metadata.resource_version);
}

TEST_F(RouteSyncTest, AFinalizerDeletionStopsRoutingAtOnce) {
  api::Object o = MakeSandbox("held", {{api::labels::kSandboxId, "iheld"}});
  o.metadata.finalizers.push_back("agents.kruise.io/sandbox");
  api::Object created = SetPhase(store_->Create(o).value(), "Running");
  auto sync = RouteSync::Start(store_.store(), Secrets(), table_);
  ASSERT_TRUE(sync.ok()) << sync.status();
  ASSERT_EQ(StateOf("iheld"), RouteState::kRunning);
  // The object stays (finalizer) with a deletionTimestamp: the route is down already.
  ASSERT_TRUE(store_->Delete(api::SandboxKind(), "default", "held").ok());
  EXPECT_TRUE(Eventually([&] { return StateOf("iheld") == RouteState::kGone; }));
  api::Object current = store_->Get(api::SandboxKind(), "default", "held").value();
  current.RemoveFinalizer("agents.kruise.io/sandbox");
  ASSERT_TRUE(store_->Update(current).ok());
  EXPECT_TRUE(Eventually([&] { return !table_.Lookup("iheld"); }));
}

TEST_F(RouteSyncTest, AReplayedStoreEventDoesNotUndoADirectRemoval) {
  // Real events from the store, kept to be delivered late (a watch that lags behind the kill
  // path).
  auto watcher = store_->Watch(&api::SandboxKind(), store::WatchOptions{.resource_version = 0});
  ASSERT_TRUE(watcher.ok()) << watcher.status();
  CreateSandbox("victim", "ivictim", "Running");
  auto sync = RouteSync::Start(store_.store(), Secrets(), table_);
  ASSERT_TRUE(sync.ok()) << sync.status();
  ASSERT_EQ(StateOf("ivictim"), RouteState::kRunning);

  // The kill path: delete the object, then tell the table directly with the deletion's revision.
  api::Object deleted = store_->Delete(api::SandboxKind(), "default", "victim").value();
  table_.Remove("ivictim", deleted.metadata.resource_version);
  ASSERT_FALSE(table_.Lookup("ivictim"));

  std::vector<store::WatchEvent> late;
  while (late.size() < 3) {  // ADDED, MODIFIED (Running), DELETED
    auto next = (*watcher)->Next(5s);
    ASSERT_TRUE(next.ok() && next->has_value()) << "watch gave up after " << late.size();
    late.push_back(**next);
  }
  ASSERT_EQ(late[1].type, store::EventType::kModified);
  for (const auto& event : late) {
    EXPECT_FALSE(ApplySandboxEvent(table_, event, Secrets())) << store::EventTypeName(event.type);
  }
  EXPECT_FALSE(table_.Lookup("ivictim")) << "a stale event resurrected a killed sandbox";

  // A new object taking the id later is routed again.
  CreateSandbox("successor", "ivictim", "Running", "tok-2");
  EXPECT_TRUE(Eventually([&] { return StateOf("ivictim") == RouteState::kRunning; }));
  EXPECT_EQ(table_.Lookup("ivictim")->route->access_token, "tok-2");
}

TEST_F(RouteSyncTest, AFreshListRemovesRoutesWhoseObjectsVanished) {
  CreateSandbox("alive", "ialive", "Running");
  Route ghost;
  ghost.sandbox_id = "ighost";
  ghost.state = RouteState::kRunning;
  ghost.resource_version = 1;  // from before the list
  ASSERT_EQ(table_.Upsert(ghost), UpdateResult::kApplied);
  auto sync = RouteSync::Start(store_.store(), Secrets(), table_);
  ASSERT_TRUE(sync.ok()) << sync.status();
  EXPECT_FALSE(table_.Lookup("ighost"));
  EXPECT_TRUE(table_.Lookup("ialive"));
  (*sync)->Stop();
  (*sync)->Stop();  // idempotent
}

}  // namespace
}  // namespace warren::gateway
