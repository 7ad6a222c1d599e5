#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/kinds.h"
#include "store/testing/backend_store.h"
#include "store/testing/objects.h"

namespace warren::store {
namespace {

using testing::Backend;
using testing::BackendStore;
using testing::MakeSandbox;
using testing::MakeSandboxSet;

const api::KindInfo& kSbx = api::SandboxKind();
const api::KindInfo& kSbs = api::SandboxSetKind();

class StoreBasics : public ::testing::TestWithParam<Backend> {};

TEST_P(StoreBasics, CreateAssignsServerFields) {
  BackendStore s(GetParam());
  auto created = s->Create(MakeSandbox("a"));
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata.generation, 1);
  EXPECT_EQ(created->metadata.uid.size(), 36u);
  EXPECT_TRUE(created->metadata.creation_timestamp.has_value());
  EXPECT_GT(created->metadata.resource_version, 0);
  EXPECT_EQ(s->CurrentRevision(), created->metadata.resource_version);

  auto got = s->Get(kSbx, "default", "a");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->metadata.uid, created->metadata.uid);
  EXPECT_EQ(got->metadata.resource_version, created->metadata.resource_version);
  EXPECT_EQ(got->spec()["template"]["spec"]["containers"][0]["image"], "base");

  auto dup = s->Create(MakeSandbox("a"));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(dup.status().message(), "sandboxes.agents.kruise.io \"a\" already exists");
}

TEST_P(StoreBasics, GenerateNameAddsAKubernetesSuffix) {
  BackendStore s(GetParam());
  api::Object o = MakeSandbox("");
  o.metadata.generate_name = "pool-";
  auto a = s->Create(o);
  auto b = s->Create(o);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->metadata.name.size(), 10u);
  EXPECT_EQ(a->metadata.name.substr(0, 5), "pool-");
  EXPECT_NE(a->metadata.name, b->metadata.name);
  EXPECT_EQ(a->metadata.name.find_first_of("aeiou", 5), std::string::npos);
}

TEST_P(StoreBasics, CreateDropsStatusAndRejectsResourceVersion) {
  BackendStore s(GetParam());
  api::Object o = MakeSandbox("a");
  o.status()["phase"] = "Running";
  auto created = s->Create(o);
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(created->body.contains("status"));

  o.metadata.name = "b";
  o.metadata.resource_version = 7;
  auto bad = s->Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("metadata.resourceVersion"), std::string::npos);
}

TEST_P(StoreBasics, GenerationFollowsSpecNotMetadataOrStatus) {
  BackendStore s(GetParam());
  auto obj = *s->Create(MakeSandboxSet("p", 1));
  ASSERT_EQ(obj.metadata.generation, 1);

  // Metadata only: new revision, same generation.
  obj.metadata.labels["team"] = "a";
  auto v2 = s->Update(obj);
  ASSERT_TRUE(v2.ok()) << v2.status();
  EXPECT_EQ(v2->metadata.generation, 1);
  EXPECT_GT(v2->metadata.resource_version, obj.metadata.resource_version);

  // Spec: generation + 1.
  v2->spec()["replicas"] = 3;
  auto v3 = s->Update(*v2);
  ASSERT_TRUE(v3.ok()) << v3.status();
  EXPECT_EQ(v3->metadata.generation, 2);

  // Status through the status subresource: no bump; a spec change sent with it is ignored.
  api::Object st = *v3;
  st.status()["replicas"] = 3;
  st.spec()["replicas"] = 99;
  auto v4 = s->UpdateStatus(st);
  ASSERT_TRUE(v4.ok()) << v4.status();
  EXPECT_EQ(v4->metadata.generation, 2);
  EXPECT_EQ(v4->status()["replicas"], 3);
  EXPECT_EQ(v4->spec()["replicas"], 3);

  // Status sent to the main resource is ignored (the stored status stays).
  api::Object main = *v4;
  main.status()["replicas"] = 0;
  main.metadata.labels["x"] = "y";
  auto v5 = s->Update(main);
  ASSERT_TRUE(v5.ok()) << v5.status();
  EXPECT_EQ(v5->status()["replicas"], 3);

  // An update that changes nothing writes nothing.
  int64_t before = s->CurrentRevision();
  auto same = s->Update(*v5);
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(same->metadata.resource_version, v5->metadata.resource_version);
  EXPECT_EQ(s->CurrentRevision(), before);
}

// A node agent's finalizer and first status in one write: one revision, both kept, the
// generation unchanged; a status admission refuses is refused whole.
TEST_P(StoreBasics, MainAndStatusWritesBothInOneRevision) {
  BackendStore s(GetParam());
  auto created = *s->Create(MakeSandbox("a"));
  api::Object bad = created;
  bad.AddFinalizer("warren.dev/test");
  bad.status()["phase"] = 5;
  auto refused = s->Update(bad, Subresource::kMainAndStatus);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("phase"), std::string::npos) << refused.status();
  EXPECT_EQ(s->CurrentRevision(), created.metadata.resource_version) << "nothing is written";

  api::Object both = created;
  both.AddFinalizer("warren.dev/test");
  both.status()["phase"] = "Pending";
  auto written = s->Update(both, Subresource::kMainAndStatus);
  ASSERT_TRUE(written.ok()) << written.status();
  EXPECT_EQ(written->metadata.resource_version, created.metadata.resource_version + 1);
  EXPECT_EQ(written->metadata.generation, 1);
  auto got = *s->Get(kSbx, "default", "a");
  EXPECT_TRUE(got.HasFinalizer("warren.dev/test"));
  EXPECT_EQ(got.status()["phase"], "Pending");
  EXPECT_EQ(got.metadata.resource_version, written->metadata.resource_version);
}

TEST_P(StoreBasics, StaleUpdateIsAConflictNamingTheObject) {
  BackendStore s(GetParam());
  auto v1 = *s->Create(MakeSandbox("a"));
  api::Object first = v1;
  first.metadata.labels["w"] = "1";
  ASSERT_TRUE(s->Update(first).ok());
  api::Object second = v1;  // read before the first write
  second.metadata.labels["w"] = "2";
  auto r = s->Update(second);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kAborted);
  EXPECT_NE(r.status().message().find(
                "Operation cannot be fulfilled on sandboxes.agents.kruise.io \"a\": the object "
                "has been modified"),
            std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find(
                fmt::format("stale resourceVersion {}", v1.metadata.resource_version)),
            std::string::npos)
      << r.status();
  EXPECT_EQ(s->Get(kSbx, "default", "a")->metadata.labels.at("w"), "1");

  // Without a resourceVersion an update is unconditional.
  second.metadata.resource_version = 0;
  EXPECT_TRUE(s->Update(second).ok());
}

TEST_P(StoreBasics, MergePatch) {
  BackendStore s(GetParam());
  auto v1 = *s->Create(MakeSandboxSet("p", 1));
  auto patched = s->Patch(kSbs, "default", "p", api::Json::parse(R"({"spec": {"replicas": 4},
                                               "metadata": {"labels": {"a": "b"}}})"));
  ASSERT_TRUE(patched.ok()) << patched.status();
  EXPECT_EQ(patched->spec()["replicas"], 4);
  EXPECT_EQ(patched->metadata.labels.at("a"), "b");
  EXPECT_EQ(patched->metadata.generation, 2);
  EXPECT_EQ(patched->spec()["template"]["spec"]["containers"][0]["name"], "main");

  // Status patch.
  auto st = s->Patch(kSbs, "default", "p", api::Json::parse(R"({"status": {"replicas": 2}})"),
                     Subresource::kStatus);
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_EQ(st->status()["replicas"], 2);
  EXPECT_EQ(st->metadata.generation, 2);

  // A resourceVersion in the patch is a precondition.
  auto stale =
      s->Patch(kSbs, "default", "p",
               {{"metadata", {{"resourceVersion", std::to_string(v1.metadata.resource_version)}}},
                {"spec", {{"replicas", 5}}}});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kAborted);

  // A patch that makes the object invalid is rejected with the field named.
  auto invalid = s->Patch(kSbs, "default", "p", api::Json::parse(R"({"spec": {"replicas": -2}})"));
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(invalid.status().message().find("spec.replicas: Invalid value: -2: must be >= 0"),
            std::string::npos)
      << invalid.status();
  auto wrong_type =
      s->Patch(kSbs, "default", "p", api::Json::parse(R"({"metadata": {"labels": "x"}})"));
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_NE(wrong_type.status().message().find("metadata.labels: must be an object of strings"),
            std::string::npos)
      << wrong_type.status();
  EXPECT_EQ(s->Get(kSbs, "default", "p")->spec()["replicas"], 4);
}

TEST_P(StoreBasics, BadInputGetsItsCodeAndAMessage) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("a")).ok());
  struct Case {
    std::string what;
    Status status;
    StatusCode code;
    std::string message_part;
  };
  api::Object unknown = MakeSandbox("x");
  unknown.kind = "Pod";
  api::Object invalid = MakeSandbox("Not_Valid");
  api::Object huge = MakeSandbox("huge");
  huge.metadata.annotations["big"] = std::string(200 * 1024, 'x');
  huge.spec()["blob"] = std::string(2 * 1024 * 1024, 'y');
  api::Object missing = MakeSandbox("missing");
  ListOptions bad_token;
  bad_token.continue_token = "not-a-token";
  WatchOptions future;
  future.resource_version = s->CurrentRevision() + 100;
  std::vector<Case> cases = {
      {"unknown kind", s->Create(unknown).status(), StatusCode::kNotFound,
       "doesn't have a resource type \"Pod\""},
      {"invalid name", s->Create(invalid).status(), StatusCode::kInvalidArgument,
       "metadata.name: invalid value \"Not_Valid\""},
      {"too large", s->Create(huge).status(), StatusCode::kInvalidArgument, "is too large"},
      {"update missing", s->Update(missing).status(), StatusCode::kNotFound,
       "sandboxes.agents.kruise.io \"missing\" not found"},
      {"get missing", s->Get(kSbx, "default", "missing").status(), StatusCode::kNotFound,
       "sandboxes.agents.kruise.io \"missing\" not found"},
      {"delete missing", s->Delete(kSbx, "default", "missing").status(), StatusCode::kNotFound,
       "not found"},
      {"patch not object", s->Patch(kSbx, "default", "a", api::Json::array()).status(),
       StatusCode::kInvalidArgument, "a merge patch must be a JSON object"},
      {"bad continue", s->List(kSbx, bad_token).status(), StatusCode::kInvalidArgument,
       "invalid continue token"},
      {"watch from the future", s->Watch(&kSbx, future).status(), StatusCode::kInvalidArgument,
       "is newer than the store's current revision"},
      {"status of a kind without one",
       s->Patch(api::SandboxTemplateKind(), "default", "t", api::Json::object(),
                Subresource::kStatus)
           .status(),
       StatusCode::kNotFound, "has no status subresource"},
  };
  for (const auto& c : cases) {
    EXPECT_EQ(c.status.code(), c.code) << c.what << ": " << c.status;
    EXPECT_NE(c.status.message().find(c.message_part), std::string::npos)
        << c.what << ": " << c.status;
  }
}

TEST_P(StoreBasics, ClusterScopedKindsIgnoreNamespaces) {
  BackendStore s(GetParam());
  api::Object node;
  node.api_version = api::kWarrenApiVersion;
  node.kind = "Node";
  node.metadata.name = "n1";
  node.metadata.namespace_ = "ignored";
  auto created = s->Create(node);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->metadata.namespace_, "");
  EXPECT_TRUE(s->Get(api::NodeKind(), "whatever", "n1").ok());
}

TEST_P(StoreBasics, DataAndRevisionSurviveReopen) {
  BackendStore s(GetParam());
  ASSERT_TRUE(s->Create(MakeSandbox("a")).ok());
  ASSERT_TRUE(s->Create(MakeSandbox("b")).ok());
  int64_t rev = s->CurrentRevision();
  s.Reopen();
  EXPECT_EQ(s->CurrentRevision(), rev);
  EXPECT_TRUE(s->Get(kSbx, "default", "a").ok());
  auto c = s->Create(MakeSandbox("c"));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->metadata.resource_version, rev + 1);
}

INSTANTIATE_TEST_SUITE_P(, StoreBasics, ::testing::Values(Backend::kSqlite, Backend::kEtcd),
                         [](const auto& info) { return testing::BackendName(info.param); });

}  // namespace
}  // namespace warren::store
