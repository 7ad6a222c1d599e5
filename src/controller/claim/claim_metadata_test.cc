#include "controller/claim/claim_metadata.h"

#include <gtest/gtest.h>

#include "api/inplace_update.h"
#include "api/sandbox_secrets.h"
#include "api/typed_codec.h"
#include "api/types/labels.h"
#include "controller/sandboxset_member.h"

namespace warren::controller::claim {
namespace {

api::Object Member() {
  api::Object o;
  o.api_version = "agents.kruise.io/v1alpha1";
  o.kind = "Sandbox";
  o.metadata.name = "pool-abcde";
  o.metadata.namespace_ = "default";
  o.spec() = {{"templateRef", {{"name", "pool-rev"}}}, {"pauseStrategy", {{"idleSeconds", 30}}}};
  return o;
}

// A claim whose pauses keep files only changes the member's pause type for that user alone:
// the recycle that returns it to its pool puts the pool's own strategy back.
TEST(ClaimMetadata, AFilesOnlyPauseLastsUntilTheRecycle) {
  const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  api::Object set;
  set.api_version = "agents.kruise.io/v1alpha1";
  set.kind = "SandboxSet";
  set.metadata.name = "pool";
  set.metadata.namespace_ = "default";
  set.metadata.uid = "set-uid";

  api::Object sandbox = Member();
  ClaimRequest request;
  request.pause_files_only = true;
  ApplyClaim(sandbox, request, "lock", base::WallTime{}, base::WallTime{}, secrets);
  EXPECT_EQ(sandbox.spec()["pauseStrategy"]["type"], "Stop");
  EXPECT_EQ(sandbox.spec()["pauseStrategy"]["idleSeconds"], 30) << "the rest of it is kept";

  ResetForPool(sandbox, set, "pool-token", secrets);
  EXPECT_EQ(sandbox.spec()["pauseStrategy"], Member().spec()["pauseStrategy"]);
  EXPECT_FALSE(sandbox.metadata.annotations.contains(pool_annotations::kPoolPauseStrategy));

  // A member with no strategy of its own gets none back.
  api::Object bare = Member();
  bare.spec().erase("pauseStrategy");
  ApplyClaim(bare, request, "lock", base::WallTime{}, base::WallTime{}, secrets);
  EXPECT_EQ(bare.spec()["pauseStrategy"]["type"], "Stop");
  ResetForPool(bare, set, "pool-token", secrets);
  EXPECT_FALSE(bare.spec().contains("pauseStrategy"));

  // Without the request, the claim leaves it alone.
  api::Object plain = Member();
  ApplyClaim(plain, ClaimRequest{}, "lock", base::WallTime{}, base::WallTime{}, secrets);
  EXPECT_EQ(plain.spec()["pauseStrategy"], Member().spec()["pauseStrategy"]);
}

// A private claim's traffic token and Host mask are its user's alone: sealed on the claim, gone
// when the member returns to its pool.
TEST(ClaimMetadata, ATrafficTokenAndAHostMaskLastUntilTheRecycle) {
  const api::SandboxSecrets secrets = api::SandboxSecrets::ForTesting();
  api::Object set;
  set.metadata.name = "pool";
  set.metadata.namespace_ = "default";
  set.metadata.uid = "set-uid";
  set.api_version = "agents.kruise.io/v1alpha1";
  set.kind = "SandboxSet";
  api::Object sandbox = Member();
  ClaimRequest request;
  request.traffic_token = "t0k3n";
  request.annotations["warren.dev/mask-request-host"] = "localhost:${PORT}";
  ApplyClaim(sandbox, request, "lock", base::WallTime{}, base::WallTime{}, secrets);
  EXPECT_EQ(secrets.TrafficToken(sandbox).value(), "t0k3n");
  EXPECT_NE(sandbox.metadata.annotations.at(api::annotations::kSealedTrafficToken), "t0k3n")
      << "sealed, not in the clear";
  ResetForPool(sandbox, set, "pool-token", secrets);
  EXPECT_FALSE(sandbox.metadata.annotations.contains(api::annotations::kSealedTrafficToken));
  EXPECT_FALSE(sandbox.metadata.annotations.contains("warren.dev/mask-request-host"));
}

TEST(ClaimMetadata, AnInplaceUpdateWritesTheTemplateInlineWithTheClaimsImageAndCpu) {
  api::Object sandbox = Member();
  const api::Json pod_template = api::ParseJson(R"({"spec":{"restartPolicy":"Never",
      "containers":[{"name":"main","image":"base","resources":{"limits":{"cpu":"1"}}}]}})")
                                     .value();
  api::InplaceUpdateSpec update;
  update.image = "busybox";
  update.resources.limits["cpu"] = api::Quantity::Parse("2").value();
  auto revision = ApplyInplaceUpdate(sandbox, pod_template, update);
  ASSERT_TRUE(revision.ok()) << revision.status();
  EXPECT_FALSE(sandbox.spec().contains("templateRef"));
  const api::Json& t = sandbox.spec()["template"];
  EXPECT_EQ(t["spec"]["containers"][0]["image"], "busybox");
  EXPECT_EQ(t["spec"]["containers"][0]["resources"]["limits"]["cpu"], "2");
  EXPECT_EQ(t["spec"]["restartPolicy"], "Never") << "fields Warren does not model stay";
  EXPECT_EQ(sandbox.spec()["pauseStrategy"]["idleSeconds"], 30);
  // The revision is what the node will report once it runs that template.
  auto decoded = api::DecodeTyped<api::PodTemplateSpec>(t, "template");
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(*revision, api::PodTemplateHash(*decoded));

  api::Object empty = Member();
  EXPECT_EQ(ApplyInplaceUpdate(empty, api::Json(), update).status().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warren::controller::claim
