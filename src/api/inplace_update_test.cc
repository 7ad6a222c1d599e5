#include "api/inplace_update.h"

#include <gtest/gtest.h>

#include "api/typed_codec.h"

namespace warren::api {
namespace {

PodTemplateSpec Template(const char* json) {
  auto t = DecodeTyped<PodTemplateSpec>(ParseJson(json).value(), "template");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return *t;
}

constexpr const char* kBase = R"({"metadata":{"labels":{"app":"a"}},"spec":{"containers":[{
  "name":"main","image":"img:1","command":["sleep","1"],
  "resources":{"limits":{"cpu":"1","memory":"512Mi"},"requests":{"cpu":"500m"}}}],
  "volumes":[{"name":"data","emptyDir":{}}]}})";

TEST(InPlaceUpdate, HashIsStableAndTracksEveryField) {
  const PodTemplateSpec a = Template(kBase);
  EXPECT_EQ(PodTemplateHash(a), PodTemplateHash(Template(kBase)));
  EXPECT_EQ(PodTemplateHash(a).size(), 8u);
  PodTemplateSpec b = a;
  b.spec.containers[0].image = "img:2";
  EXPECT_NE(PodTemplateHash(a), PodTemplateHash(b));
}

TEST(InPlaceUpdate, ImageResourcesAndMetadataQualify) {
  const PodTemplateSpec a = Template(kBase);
  PodTemplateSpec b = a;
  b.spec.containers[0].image = "img:2";
  b.spec.containers[0].resources.limits["cpu"] = Quantity::Parse("2").value();
  b.metadata.labels["app"] = "b";
  TemplateChange c = ClassifyTemplateChange(a, b);
  EXPECT_TRUE(c.in_place()) << c.not_in_place;
  EXPECT_TRUE(c.image);
  EXPECT_TRUE(c.resources);
  EXPECT_TRUE(c.metadata);
  EXPECT_FALSE(ClassifyTemplateChange(a, a).any());
}

TEST(InPlaceUpdate, OtherChangesRecreateAndNameTheField) {
  const PodTemplateSpec a = Template(kBase);
  PodTemplateSpec command = a;
  command.spec.containers[0].command = {"sleep", "2"};
  EXPECT_EQ(ClassifyTemplateChange(a, command).not_in_place, "spec.containers[0].command changed");

  PodTemplateSpec added = a;
  added.spec.containers[0].resources.requests["memory"] = Quantity::Parse("1Gi").value();
  EXPECT_EQ(ClassifyTemplateChange(a, added).not_in_place,
            "spec.containers[0].resources.requests.memory added");

  PodTemplateSpec storage = a;
  storage.spec.containers[0].resources.limits["ephemeral-storage"] = Quantity::Parse("1Gi").value();
  EXPECT_FALSE(ClassifyTemplateChange(a, storage).in_place());

  PodTemplateSpec volumes = a;
  volumes.spec.volumes.clear();
  EXPECT_EQ(ClassifyTemplateChange(a, volumes).not_in_place, "spec.volumes changed");

  PodTemplateSpec second = a;
  second.spec.containers.push_back(a.spec.containers[0]);
  EXPECT_FALSE(ClassifyTemplateChange(a, second).in_place());

  PodTemplateSpec runtime = a;
  runtime.spec.runtime_class_name = "gvisor";
  EXPECT_EQ(ClassifyTemplateChange(a, runtime).not_in_place, "spec.runtimeClassName changed");
}

}  // namespace
}  // namespace warren::api
