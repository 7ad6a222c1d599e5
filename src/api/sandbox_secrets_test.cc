#include "api/sandbox_secrets.h"

#include <gtest/gtest.h>

#include "api/object_codec.h"
#include "api/types/labels.h"

namespace warren::api {
namespace {

Object Sandbox(std::string ns, std::string name) {
  Object o;
  o.api_version = "agents.kruise.io/v1alpha1";
  o.kind = "Sandbox";
  o.metadata.namespace_ = std::move(ns);
  o.metadata.name = std::move(name);
  return o;
}

TEST(SandboxSecretsTest, AReaderOfTheObjectSeesNeitherSecret) {
  SandboxSecrets secrets = SandboxSecrets::ForTesting();
  Object o = Sandbox("team-a", "i1");
  secrets.SetAccessToken(o, "tok-0123456789");
  secrets.SetInitRequest(o, R"({"envVars":{"PASSWORD":"hunter2"}})");
  std::string json = DumpJson(ObjectToJson(o));
  EXPECT_EQ(json.find("tok-0123456789"), std::string::npos);
  EXPECT_EQ(json.find("hunter2"), std::string::npos);
  EXPECT_EQ(*secrets.AccessToken(o), "tok-0123456789");
  EXPECT_EQ(*secrets.InitRequest(o), R"({"envVars":{"PASSWORD":"hunter2"}})");
}

TEST(SandboxSecretsTest, ASealedValueCopiedToAnotherSandboxDoesNotOpen) {
  SandboxSecrets secrets = SandboxSecrets::ForTesting();
  Object victim = Sandbox("team-a", "i1");
  secrets.SetAccessToken(victim, "victim-token");
  Object thief = Sandbox("team-b", "i1");
  thief.metadata.annotations = victim.metadata.annotations;
  EXPECT_EQ(secrets.AccessToken(thief).status().code(), StatusCode::kDataLoss);
  // Nor as the other secret of the same object.
  victim.metadata.annotations[annotations::kSealedInitRequest] =
      victim.metadata.annotations[annotations::kSealedAccessToken];
  EXPECT_EQ(secrets.InitRequest(victim).status().code(), StatusCode::kDataLoss);
}

TEST(SandboxSecretsTest, NoneIsEmptyAndEmptyRemoves) {
  SandboxSecrets secrets = SandboxSecrets::ForTesting();
  Object o = Sandbox("a", "b");
  EXPECT_EQ(*secrets.AccessToken(o), "");
  secrets.SetAccessToken(o, "t");
  secrets.SetAccessToken(o, "");
  EXPECT_FALSE(o.metadata.annotations.contains(annotations::kSealedAccessToken));
  secrets.SetInitRequest(o, "{}");
  secrets.Forget(o);
  EXPECT_TRUE(o.metadata.annotations.empty());
}

TEST(SandboxSecretsTest, PlainTextFromBeforeSealingIsSealedAndRemoved) {
  SandboxSecrets secrets = SandboxSecrets::ForTesting();
  Object o = Sandbox("a", "b");
  o.metadata.annotations[annotations::kRuntimeAccessToken] = "old-token";
  o.metadata.annotations[annotations::kInitRuntimeRequest] = R"({"accessToken":"old-token"})";
  EXPECT_TRUE(secrets.SealPlainText(o));
  EXPECT_FALSE(o.metadata.annotations.contains(annotations::kRuntimeAccessToken));
  EXPECT_FALSE(o.metadata.annotations.contains(annotations::kInitRuntimeRequest));
  EXPECT_EQ(*secrets.AccessToken(o), "old-token");
  EXPECT_EQ(*secrets.InitRequest(o), R"({"accessToken":"old-token"})");
  EXPECT_FALSE(secrets.SealPlainText(o));
}

}  // namespace
}  // namespace warren::api
