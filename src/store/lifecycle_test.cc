// Finalizers and owner-reference garbage collection.

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "api/kinds.h"
#include "base/encoding.h"
#include "net/http_client.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"
#include "store/testing/temp_store.h"

namespace warren::store {
namespace {

using namespace std::chrono_literals;
using testing::Backend;
using testing::BackendStore;
using testing::MakeSandbox;
using testing::MakeSandboxSet;

const api::KindInfo& kSbx = api::SandboxKind();
const api::KindInfo& kSbs = api::SandboxSetKind();

bool Exists(BackendStore& s, const api::KindInfo& kind, const std::string& name) {
  auto r = s->Get(kind, "default", name);
  EXPECT_TRUE(r.ok() || r.status().code() == StatusCode::kNotFound) << r.status();
  return r.ok();
}

class Finalizers : public ::testing::TestWithParam<Backend> {};
class GarbageCollection : public ::testing::TestWithParam<Backend> {};

TEST_P(Finalizers, DeleteWaitsForTheLastFinalizer) {
  BackendStore s(GetParam());
  api::Object o = MakeSandbox("f");
  o.metadata.finalizers = {"agents.kruise.io/sandbox", "example.com/backup"};
  ASSERT_TRUE(s->Create(o).ok());
  WatchOptions wopts;
  wopts.resource_version = s->CurrentRevision();
  auto w = s->Watch(&kSbx, wopts);
  ASSERT_TRUE(w.ok());

  auto deleting = s->Delete(kSbx, "default", "f");
  ASSERT_TRUE(deleting.ok()) << deleting.status();
  ASSERT_TRUE(deleting->metadata.deletion_timestamp.has_value());
  auto still = s->Get(kSbx, "default", "f");
  ASSERT_TRUE(still.ok());
  EXPECT_TRUE(still->metadata.deletion_timestamp.has_value());

  // Deleting again changes nothing; adding a finalizer now is refused.
  auto again = s->Delete(kSbx, "default", "f");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->metadata.resource_version, still->metadata.resource_version);
  api::Object add = *still;
  add.metadata.finalizers.push_back("example.com/late");
  auto refused = s->Update(add);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("no new finalizers can be added"), std::string::npos);
  // A spec change on a terminating object is still allowed, and so is dropping a finalizer.
  api::Object drop_one = *still;
  drop_one.RemoveFinalizer("example.com/backup");
  auto one_left = s->Update(drop_one);
  ASSERT_TRUE(one_left.ok()) << one_left.status();
  EXPECT_TRUE(Exists(s, kSbx, "f"));
  // The last one: the object is gone.
  one_left->RemoveFinalizer("agents.kruise.io/sandbox");
  auto gone = s->Update(*one_left);
  ASSERT_TRUE(gone.ok()) << gone.status();
  EXPECT_FALSE(Exists(s, kSbx, "f"));

  std::vector<EventType> types;
  for (int i = 0; i < 3; ++i) {
    auto e = (*w)->Next(5s);
    ASSERT_TRUE(e.ok() && e->has_value());
    types.push_back((*e)->type);
  }
  EXPECT_EQ(types, (std::vector<EventType>{EventType::kModified, EventType::kModified,
                                           EventType::kDeleted}));
}

TEST_P(GarbageCollection, DependentsGoWithTheirOwner) {
  BackendStore s(GetParam());
  auto owner = *s->Create(MakeSandboxSet("pool"));
  auto other_owner = *s->Create(MakeSandboxSet("other"));
  for (int i = 0; i < 3; ++i) {
    api::Object d = MakeSandbox(fmt::format("pool-{}", i));
    d.metadata.owner_references = {owner.MakeControllerRef()};
    ASSERT_TRUE(s->Create(d).ok());
  }
  api::Object shared = MakeSandbox("shared");
  shared.metadata.owner_references = {owner.MakeControllerRef(), other_owner.MakeControllerRef()};
  shared.metadata.owner_references[1].controller = false;
  ASSERT_TRUE(s->Create(shared).ok());
  api::Object guarded = MakeSandbox("guarded");
  guarded.metadata.owner_references = {owner.MakeControllerRef()};
  guarded.metadata.finalizers = {"example.com/keep"};
  ASSERT_TRUE(s->Create(guarded).ok());
  // A grandchild: collected once its own owner is collected.
  auto child = *s->Get(kSbx, "default", "pool-0");
  api::Object grandchild = MakeSandbox("grandchild");
  grandchild.metadata.owner_references = {child.MakeControllerRef()};
  ASSERT_TRUE(s->Create(grandchild).ok());

  ASSERT_TRUE(s->Delete(kSbs, "default", "pool").ok());
  s.WaitForGarbageCollection();

  for (int i = 0; i < 3; ++i) EXPECT_FALSE(Exists(s, kSbx, fmt::format("pool-{}", i))) << i;
  EXPECT_FALSE(Exists(s, kSbx, "grandchild"));
  auto kept = s->Get(kSbx, "default", "shared");
  ASSERT_TRUE(kept.ok()) << "a dependent with a live owner stays";
  ASSERT_EQ(kept->metadata.owner_references.size(), 1u);
  EXPECT_EQ(kept->metadata.owner_references[0].uid, other_owner.metadata.uid);
  auto terminating = s->Get(kSbx, "default", "guarded");
  ASSERT_TRUE(terminating.ok());
  EXPECT_TRUE(terminating->metadata.deletion_timestamp.has_value());
}

TEST_P(GarbageCollection, OrphanPropagationKeepsDependents) {
  BackendStore s(GetParam());
  auto owner = *s->Create(MakeSandboxSet("pool"));
  api::Object d = MakeSandbox("member");
  d.metadata.owner_references = {owner.MakeControllerRef()};
  ASSERT_TRUE(s->Create(d).ok());
  DeleteOptions opts;
  opts.propagation = Propagation::kOrphan;
  ASSERT_TRUE(s->Delete(kSbs, "default", "pool", opts).ok());
  s.WaitForGarbageCollection();
  auto member = s->Get(kSbx, "default", "member");
  ASSERT_TRUE(member.ok());
  EXPECT_TRUE(member->metadata.owner_references.empty());
}

TEST_P(GarbageCollection, DependentOfAMissingOwnerIsCollected) {
  BackendStore s(GetParam());
  api::Object d = MakeSandbox("stray");
  d.metadata.owner_references = {{api::kAgentsApiVersion, "SandboxSet", "ghost",
                                  "00000000-0000-4000-8000-000000000000", true, true}};
  ASSERT_TRUE(s->Create(d).ok());
  s.WaitForGarbageCollection();
  EXPECT_FALSE(Exists(s, kSbx, "stray"));
}

// An owner removed just before a crash, with its dependents still there: the collector finds
// them when the store opens again. SQLite: the owner's row goes behind the store's back.
TEST(GarbageCollectionSqlite, ResumesAfterRestart) {
  testing::TempStore s;
  auto owner = *s->Create(MakeSandboxSet("pool"));
  api::Object d = MakeSandbox("member");
  d.metadata.owner_references = {owner.MakeControllerRef()};
  ASSERT_TRUE(s->Create(d).ok());
  s.Close();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(s.db_path().c_str(), &db), SQLITE_OK);
    ASSERT_EQ(
        sqlite3_exec(db, "DELETE FROM objects WHERE name = 'pool'", nullptr, nullptr, nullptr),
        SQLITE_OK);
    sqlite3_close(db);
  }
  s.Reopen();
  s->WaitForGarbageCollection();
  auto member = s->Get(kSbx, "default", "member");
  EXPECT_EQ(member.status().code(), StatusCode::kNotFound);
}

// The same on etcd: the owner's key and uid index go behind the store's back (as when the
// server that deleted it died before its collector ran), and a store opened afterwards collects
// the dependent.
TEST(GarbageCollectionEtcd, ResumesAfterRestart) {
  BackendStore s(Backend::kEtcd);
  auto owner = *s->Create(MakeSandboxSet("pool"));
  api::Object d = MakeSandbox("member");
  d.metadata.owner_references = {owner.MakeControllerRef()};
  ASSERT_TRUE(s->Create(d).ok());
  s.Close();
  {
    auto client = net::HttpClient::ForAddress(s.etcd()->endpoints()[0]);
    ASSERT_TRUE(client.ok());
    for (std::string key : {std::string("/warren/agents.kruise.io/sandboxsets/default/pool"),
                            "/warren/_uids/" + owner.metadata.uid}) {
      net::ClientRequest req;
      req.method = "POST";
      req.target = "/v3/kv/deleterange";
      req.body = api::DumpJson(api::Json{{"key", base::Base64Encode(key)}});
      auto r = (*client)->Do(req);
      ASSERT_TRUE(r.ok() && r->status == 200) << key;
      EXPECT_NE(r->body.find("\"deleted\""), std::string::npos) << key << ": " << r->body;
    }
  }
  s.Reopen();
  s.WaitForGarbageCollection();
  EXPECT_FALSE(Exists(s, kSbx, "member"));
}

INSTANTIATE_TEST_SUITE_P(, Finalizers, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });
INSTANTIATE_TEST_SUITE_P(, GarbageCollection, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::store
