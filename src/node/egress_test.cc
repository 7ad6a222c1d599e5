#include "node/egress.h"

#include <gtest/gtest.h>

#include "api/types/labels.h"

namespace warren::node {
namespace {

TEST(EgressTest, TheE2bFieldsAndTheTrafficPoliciesHoldTogether) {
  api::Object sandbox;
  EXPECT_EQ(EgressAnnotationsOf(sandbox), "");
  EXPECT_TRUE(EgressPolicyOf(sandbox)->IsDefault());
  sandbox.metadata.annotations[api::annotations::kNetwork] =
      R"({"allowInternetAccess":true,"allowOut":["1.1.1.1"],"denyOut":[]})";
  sandbox.metadata.annotations[api::annotations::kTrafficPolicy] =
      R"({"allowInternetAccess":true,"allowOut":["example.com"],"denyOut":["0.0.0.0/0"]})";
  auto p = EgressPolicyOf(sandbox);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(
      sbnet::EgressPolicyToJson(*p).dump(),
      R"({"allowInternetAccess":true,"allowOut":["1.1.1.1/32","example.com"],"denyOut":["0.0.0.0/0"]})");
  EXPECT_NE(EgressAnnotationsOf(sandbox).find("example.com"), std::string::npos)
      << "a TrafficPolicy change is a change the node re-applies";

  sandbox.metadata.annotations[api::annotations::kTrafficPolicy] = "{";
  EXPECT_NE(EgressPolicyOf(sandbox).status().message().find("annotation warren.dev/traffic-policy"),
            std::string::npos);
}

}  // namespace
}  // namespace warren::node
