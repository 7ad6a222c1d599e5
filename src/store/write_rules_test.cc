// The write rules as pure functions, without a backend: what each write decides from what is
// stored (both backends carry these decisions out; their tests show the effects).

#include "store/write_rules.h"

#include <gtest/gtest.h>

#include "api/kinds.h"
#include "store/testing/objects.h"

namespace warren::store::rules {
namespace {

using testing::MakeSandbox;
using testing::MakeSandboxSet;

const api::KindInfo& kSbx = api::SandboxKind();
const api::KindInfo& kSbs = api::SandboxSetKind();
const base::WallTime kNow = base::WallTime(std::chrono::seconds(1'800'000'000));

// As a create would have stored it: admitted (defaults filled in), with server fields.
StoredObject Stored(api::Object o, int64_t revision = 7) {
  const api::KindInfo* kind = api::BuiltinKinds().ForObject(o.api_version, o.kind);
  EXPECT_TRUE(PrepareCreate(*kind, o).ok());
  o.metadata.uid = "uid-" + o.metadata.name;
  o.metadata.generation = 1;
  o.metadata.resource_version = revision;
  return StoredObject{std::move(o), revision};
}

TEST(WriteRules, UpdateBumpsGenerationOnlyForTheSpec) {
  StoredObject cur = Stored(MakeSandboxSet("p", 1));
  api::Object labels = cur.object;
  labels.metadata.labels["a"] = "b";
  auto w = Update(kSbs, cur, labels, Subresource::kMain);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->action, Action::kPut);
  EXPECT_EQ(w->object.metadata.generation, 1);

  api::Object spec = cur.object;
  spec.spec()["replicas"] = 3;
  spec.metadata.uid = "forged";  // server-owned: ignored
  w = Update(kSbs, cur, spec, Subresource::kMain);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->object.metadata.generation, 2);
  EXPECT_EQ(w->object.metadata.uid, "uid-p");

  api::Object status = cur.object;
  status.status()["replicas"] = 1;
  status.spec()["replicas"] = 9;  // a status write ignores the spec
  w = Update(kSbs, cur, status, Subresource::kStatus);
  ASSERT_TRUE(w.ok()) << w.status();
  EXPECT_EQ(w->object.metadata.generation, 1);
  EXPECT_EQ(w->object.spec()["replicas"], 1);

  w = Update(kSbs, cur, cur.object, Subresource::kMain);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->action, Action::kNone);
}

TEST(WriteRules, DeleteWithFinalizersMarksThenTheLastFinalizerRemoves) {
  api::Object o = MakeSandbox("f");
  o.metadata.finalizers = {"example.com/keep"};
  StoredObject cur = Stored(o);
  auto marked = Delete(kSbx, cur, {}, kNow);
  ASSERT_TRUE(marked.ok());
  EXPECT_EQ(marked->action, Action::kPut);
  EXPECT_EQ(marked->object.metadata.deletion_timestamp, kNow);

  StoredObject deleting{marked->object, 8};
  auto again = Delete(kSbx, deleting, {}, kNow + std::chrono::seconds(5));
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->action, Action::kNone);

  api::Object late = deleting.object;
  late.metadata.finalizers.push_back("example.com/late");
  auto refused = Update(kSbx, deleting, late, Subresource::kMain);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);

  api::Object done = deleting.object;
  done.metadata.finalizers.clear();
  auto removed = Update(kSbx, deleting, done, Subresource::kMain);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(removed->action, Action::kRemove);

  Preconditions wrong_uid;
  wrong_uid.uid = "someone-else";
  EXPECT_EQ(Delete(kSbx, cur, wrong_uid, kNow).status().code(), StatusCode::kAborted);
  Preconditions stale;
  stale.resource_version = 3;
  auto conflict = Delete(kSbx, cur, stale, kNow);
  EXPECT_EQ(conflict.status().code(), StatusCode::kAborted);
  EXPECT_NE(conflict.status().message().find("stale resourceVersion 3, current 7"),
            std::string::npos);
}

TEST(WriteRules, CollectDecidesFromTheOwnersThatRemain) {
  api::Object o = MakeSandbox("d");
  o.metadata.owner_references = {{api::kAgentsApiVersion, "SandboxSet", "a", "ua", true, true},
                                 {api::kAgentsApiVersion, "SandboxSet", "b", "ub", false, false}};
  StoredObject dep = Stored(o);
  auto both = Collect(kSbx, dep, {"ua", "ub"}, kNow);
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->action, Action::kNone);
  auto one = Collect(kSbx, dep, {"ub"}, kNow);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->action, Action::kPut);
  ASSERT_EQ(one->object.metadata.owner_references.size(), 1u);
  EXPECT_EQ(one->object.metadata.owner_references[0].uid, "ub");
  auto none = Collect(kSbx, dep, {}, kNow);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->action, Action::kRemove);

  EXPECT_EQ(Orphan(dep, "ua").object.metadata.owner_references.size(), 1u);
  EXPECT_EQ(Orphan(dep, "unrelated").action, Action::kNone);
}

TEST(WriteRules, PatchMayNotRenameAndCarriesItsPrecondition) {
  StoredObject cur = Stored(MakeSandboxSet("p", 1));
  auto renamed = ApplyPatch(kSbs, cur, api::Json::parse(R"({"metadata": {"name": "q"}})"));
  EXPECT_EQ(renamed.status().code(), StatusCode::kInvalidArgument);
  auto stale = ApplyPatch(kSbs, cur, api::Json::parse(R"({"metadata": {"resourceVersion": "3"}})"));
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);
  auto fine = ApplyPatch(kSbs, cur, api::Json::parse(R"({"spec": {"replicas": 2}})"));
  ASSERT_TRUE(fine.ok()) << fine.status();
  EXPECT_EQ(fine->spec()["replicas"], 2);
}

}  // namespace
}  // namespace warren::store::rules
