#include "server/auth/tenant_policy.h"

#include <gtest/gtest.h>

#include "api/json.h"
#include "api/object_codec.h"

namespace warren::server::auth {
namespace {

const base::Principal kTeam{.key_id = "0123456789abcdef", .key_name = "a", .team = "team-a"};
const base::Principal kAdmin{
    .key_id = "fedcba9876543210", .key_name = "root", .team = "default", .admin = true};

api::Object Parse(std::string_view text) {
  auto obj = api::ObjectFromJsonText(text);
  EXPECT_TRUE(obj.ok()) << obj.status();
  return obj.ok() ? *obj : api::Object();
}

const api::KindInfo& KindOf(const api::Object& obj) {
  const api::KindInfo* kind = api::BuiltinKinds().ForObject(obj.api_version, obj.kind);
  EXPECT_NE(kind, nullptr);
  return *kind;
}

api::Object Template() {
  return Parse(R"({"apiVersion":"agents.kruise.io/v1alpha1","kind":"SandboxTemplate",
      "metadata":{"name":"tpl","namespace":"team-a","resourceVersion":"3"},
      "spec":{"template":{"spec":{"containers":[{"name":"main","image":"base"}]}}}})");
}

api::Object ClaimedSandbox() {
  return Parse(R"({"apiVersion":"agents.kruise.io/v1alpha1","kind":"Sandbox",
      "metadata":{"name":"mine","namespace":"team-a","resourceVersion":"7",
        "labels":{"agents.kruise.io/sandbox-id":"abc","app":"x"},
        "annotations":{"agents.kruise.io/owner":"key-1","secrets.warren.dev/access-token":"v1.x"}},
      "spec":{"template":{"spec":{"containers":[{"name":"main","image":"base"}]}}}})");
}

api::Json Patch(std::string_view text) {
  auto j = api::ParseJson(text);
  EXPECT_TRUE(j.ok()) << j.status();
  return j.ok() ? *j : api::Json();
}

TEST(TenantPolicyTest, APatchIsJudgedOnWhatItMakes) {
  api::Object sbx = ClaimedSandbox();
  // Names no protected key, yet would remove them all.
  for (const char* wipe :
       {R"({"metadata":{"annotations":null}})", R"({"metadata":{"labels":null}})"}) {
    auto r = TenantPatchResult(kTeam, KindOf(sbx), sbx, Patch(wipe));
    EXPECT_EQ(r.status().code(), StatusCode::kPermissionDenied) << wipe;
  }
  auto own =
      TenantPatchResult(kTeam, KindOf(sbx), sbx, Patch(R"({"metadata":{"labels":{"app":"y"}}})"));
  ASSERT_TRUE(own.ok()) << own.status();
  EXPECT_EQ(own->metadata.labels.at("app"), "y");
  EXPECT_EQ(own->metadata.annotations.at("agents.kruise.io/owner"), "key-1");
}

// Found by tenant_policy_fuzz: without metadata the object had namespace "", which a scope check
// reads as "every namespace".
TEST(TenantPolicyTest, APatchCannotMoveOrRenameAnObject) {
  api::Object tpl = Template();
  for (const char* move : {R"({"metadata":null})", R"({"metadata":{"namespace":"team-b"}})",
                           R"({"metadata":{"namespace":null}})", R"({"metadata":{"name":"x"}})"}) {
    auto r = TenantPatchResult(kTeam, KindOf(tpl), tpl, Patch(move));
    EXPECT_FALSE(r.ok()) << move;
  }
}

TEST(TenantPolicyTest, AWrittenObjectIsInTheTeamsNamespaceOnly) {
  api::Object tpl = Template();
  tpl.metadata.namespace_.clear();
  EXPECT_EQ(CheckTenantWrite(kTeam, KindOf(tpl), nullptr, tpl, false).code(),
            StatusCode::kNotFound);
  tpl.metadata.namespace_ = "team-b";
  EXPECT_EQ(CheckTenantWrite(kTeam, KindOf(tpl), nullptr, tpl, false).code(),
            StatusCode::kNotFound);
  tpl.metadata.namespace_ = "team-a";
  EXPECT_TRUE(CheckTenantWrite(kTeam, KindOf(tpl), nullptr, tpl, false).ok());
  tpl.metadata.namespace_ = "team-b";
  EXPECT_TRUE(CheckTenantWrite(kAdmin, KindOf(tpl), nullptr, tpl, false).ok());
}

TEST(TenantPolicyTest, LeasesAreTheControlPlanesEvenInTheTeamsOwnNamespace) {
  // Who leads the controllers and which replica is alive: a team key could otherwise stop
  // them (take the leader lease) or have a live replica's claims resolved (expire its lease).
  const base::Principal system_team{
      .key_id = "0123456789abcdee", .key_name = "s", .team = "warren-system"};
  api::Object lease = Parse(R"({"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
      "metadata":{"name":"warren-controller-manager","namespace":"warren-system"},
      "spec":{"holderIdentity":"x"}})");
  const api::KindInfo& kind = KindOf(lease);
  for (const base::Principal& who : {kTeam, system_team}) {
    for (std::string_view ns : {"", "team-a", "warren-system"}) {
      for (Verb verb : {Verb::kRead, Verb::kWrite}) {
        EXPECT_EQ(CheckTenantScope(who, kind, ns, "", verb).code(), StatusCode::kPermissionDenied)
            << who.team << " " << ns;
      }
    }
    EXPECT_EQ(CheckTenantWrite(who, kind, nullptr, lease, false).code(),
              StatusCode::kPermissionDenied);
    EXPECT_EQ(
        CheckTenantPatch(who, kind, Patch(R"({"spec":{"holderIdentity":"me"}})"), false).code(),
        StatusCode::kPermissionDenied);
  }
  EXPECT_TRUE(CheckTenantScope(kAdmin, kind, "warren-system", "", Verb::kWrite).ok());
}

}  // namespace
}  // namespace warren::server::auth
