// The sandbox id (contracts.md): API admission defaults label + annotation
// agents.kruise.io/sandbox-id on create and keeps the label immutable.

#include <gtest/gtest.h>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/types/labels.h"
#include "api/yaml_codec.h"
#include "base/ids.h"

namespace warren::api {
namespace {

Object Sandbox(std::string_view metadata_extra = "") {
  std::string yaml = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata:
  name: s
  namespace: default
)" + std::string(metadata_extra) +
                     R"(
spec:
  template:
    spec:
      containers: [{name: main, image: base}]
)";
  auto doc = ParseYaml(yaml);
  EXPECT_TRUE(doc.ok()) << doc.status();
  auto obj = ObjectFromJson(*doc);
  EXPECT_TRUE(obj.ok()) << obj.status();
  return *obj;
}

TEST(SandboxIdAdmission, DefaultsLabelAndAnnotationOnCreate) {
  Object a = Sandbox();
  ASSERT_TRUE(AdmitCreate(SandboxKind(), a).ok());
  const std::string id = a.metadata.labels.at(labels::kSandboxId);
  EXPECT_TRUE(base::IsValidSandboxId(id)) << id;
  EXPECT_EQ(a.metadata.annotations.at(annotations::kSandboxId), id);

  Object b = Sandbox();
  ASSERT_TRUE(AdmitCreate(SandboxKind(), b).ok());
  EXPECT_NE(b.metadata.labels.at(labels::kSandboxId), id) << "each sandbox gets its own id";
}

TEST(SandboxIdAdmission, KeepsTheCreatorsId) {
  Object a = Sandbox("  labels: {agents.kruise.io/sandbox-id: imine0000000000000000}\n");
  ASSERT_TRUE(AdmitCreate(SandboxKind(), a).ok());
  EXPECT_EQ(a.metadata.labels.at(labels::kSandboxId), "imine0000000000000000");
  EXPECT_EQ(a.metadata.annotations.at(annotations::kSandboxId), "imine0000000000000000");

  // Only the annotation: the label follows it.
  Object b = Sandbox("  annotations: {agents.kruise.io/sandbox-id: iann00000000000000000}\n");
  ASSERT_TRUE(AdmitCreate(SandboxKind(), b).ok());
  EXPECT_EQ(b.metadata.labels.at(labels::kSandboxId), "iann00000000000000000");
}

TEST(SandboxIdAdmission, RejectsIdsTheRuntimeCannotUse) {
  Object a = Sandbox("  labels: {agents.kruise.io/sandbox-id: Not_A_Label}\n");
  Status s = AdmitCreate(SandboxKind(), a);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("metadata.labels[agents.kruise.io/sandbox-id]"), std::string::npos)
      << s.message();

  Object b = Sandbox(
      "  labels: {agents.kruise.io/sandbox-id: ione0000000000000000}\n"
      "  annotations: {agents.kruise.io/sandbox-id: itwo0000000000000000}\n");
  s = AdmitCreate(SandboxKind(), b);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("must equal the label"), std::string::npos) << s.message();
}

TEST(SandboxIdAdmission, LabelIsImmutable) {
  Object old_object = Sandbox();
  ASSERT_TRUE(AdmitCreate(SandboxKind(), old_object).ok());
  const std::string id = old_object.metadata.labels.at(labels::kSandboxId);

  // Unchanged (other labels may change).
  Object same = old_object;
  same.metadata.labels["app"] = "x";
  EXPECT_TRUE(AdmitUpdate(SandboxKind(), old_object, same).ok());
  EXPECT_EQ(same.metadata.labels.at(labels::kSandboxId), id);

  Object changed = old_object;
  changed.metadata.labels[labels::kSandboxId] = "iother00000000000000";
  changed.metadata.annotations[annotations::kSandboxId] = "iother00000000000000";
  Status s = AdmitUpdate(SandboxKind(), old_object, changed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("field is immutable"), std::string::npos) << s.message();

  // Dropping it is a change too (defaulting would otherwise mint a new one).
  Object dropped = old_object;
  dropped.metadata.labels.erase(labels::kSandboxId);
  dropped.metadata.annotations.erase(annotations::kSandboxId);
  s = AdmitUpdate(SandboxKind(), old_object, dropped);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find(id), std::string::npos) << s.message();
}

}  // namespace
}  // namespace warren::api
