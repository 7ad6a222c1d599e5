#include "node/volume_step.h"

#include <gtest/gtest.h>

#include "api/types/labels.h"

namespace warren::node {
namespace {

api::VolumeClaimTemplate Claim(const std::string& name) {
  api::VolumeClaimTemplate c;
  c.metadata.name = name;
  return c;
}

TEST(VolumeStep, ClaimTemplatesAndE2bMountsBecomePersistentVolumeClaims) {
  api::PodTemplateSpec pod;
  pod.spec.containers.resize(1);
  api::Volume own;
  own.name = "cache";
  own.empty_dir.emplace();
  pod.spec.volumes.push_back(own);
  // "cache" is the template's own volume: a claim of the same name does not replace it.
  AddPersistentVolumes("sbx-1", {Claim("work"), Claim("cache")}, {{"team-data", "/data"}}, pod);
  ASSERT_EQ(pod.spec.volumes.size(), 3u);
  EXPECT_TRUE(pod.spec.volumes[0].empty_dir);
  EXPECT_EQ(pod.spec.volumes[1].name, "work");
  ASSERT_TRUE(pod.spec.volumes[1].persistent_volume_claim);
  EXPECT_EQ(pod.spec.volumes[1].persistent_volume_claim->claim_name, "work-sbx-1");
  ASSERT_TRUE(pod.spec.volumes[2].persistent_volume_claim);
  EXPECT_EQ(pod.spec.volumes[2].persistent_volume_claim->claim_name, "team-data");
  ASSERT_EQ(pod.spec.containers[0].volume_mounts.size(), 1u);
  EXPECT_EQ(pod.spec.containers[0].volume_mounts[0].name, pod.spec.volumes[2].name);
  EXPECT_EQ(pod.spec.containers[0].volume_mounts[0].mount_path, "/data");
}

TEST(VolumeStep, TheAnnotationRoundTripsAndABadOneIsNamedByTheCreatesRules) {
  api::Object sbx;
  auto none = api::VolumeMountsOf(sbx);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  sbx.metadata.annotations[api::annotations::kVolumeMounts] =
      api::VolumeMountsText({{"a", "/mnt/a"}, {"b", "/b"}});
  auto two = api::VolumeMountsOf(sbx);
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ASSERT_EQ(two->size(), 2u);
  EXPECT_EQ((*two)[1].name, "b");
  EXPECT_EQ((*two)[1].path, "/b");

  // The annotation gets no more than an E2B create: the same rules, named after it.
  for (const char* bad : {"{", "{}", "[1]", R"([{"name":"a"}])", R"([{"name":1,"path":"/x"}])",
                          R"([{"name":"a","path":"/"}])", R"([{"name":"a","path":"/.warren/log"}])",
                          R"([{"name":"a","path":"rel"}])", R"([{"name":"A_b","path":"/x"}])"}) {
    sbx.metadata.annotations[api::annotations::kVolumeMounts] = bad;
    auto r = api::VolumeMountsOf(sbx);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find(api::annotations::kVolumeMounts), std::string::npos)
        << r.status().message();
  }
}

}  // namespace
}  // namespace warren::node
