#include <gtest/gtest.h>

#include <string>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/pool_autoscaler.h"
#include "api/yaml_codec.h"

namespace warren::api {
namespace {

Object FromYaml(std::string_view yaml) {
  auto doc = ParseYaml(yaml);
  EXPECT_TRUE(doc.ok()) << doc.status();
  auto obj = ObjectFromJson(*doc);
  EXPECT_TRUE(obj.ok()) << obj.status();
  return *obj;
}

std::string AdmitError(const std::string& spec, Object* out = nullptr) {
  Object obj = FromYaml(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: PoolAutoscaler
metadata: {name: pas, namespace: team-a}
spec:
)" + spec);
  Status s = AdmitCreate(PoolAutoscalerKind(), obj);
  if (out) *out = obj;
  return s.ok() ? "" : s.message();
}

TEST(PoolAutoscalerAdmissionTest, KindIsRegisteredWithItsNames) {
  const KindInfo* k = BuiltinKinds().Resolve("pas");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k, BuiltinKinds().Resolve("poolautoscalers"));
  EXPECT_EQ(k->kind, "PoolAutoscaler");
  EXPECT_TRUE(k->status_subresource);
  EXPECT_TRUE(k->namespaced);
  std::vector<std::string> columns;
  for (const auto& c : k->columns) {
    if (!c.wide_only) columns.push_back(c.name);
  }
  EXPECT_EQ(columns, (std::vector<std::string>{"TARGET", "MIN", "MAX", "CURRENT", "DESIRED"}));
}

TEST(PoolAutoscalerAdmissionTest, AFullSpecIsAdmittedAndDefaulted) {
  Object obj;
  ASSERT_EQ(AdmitError(R"(
  scaleTargetRef: {apiVersion: agents.kruise.io/v1alpha1, kind: SandboxSet, name: pool}
  maxReplicas: 50
  cronPolicies:
  - {name: business-hours, schedule: "0 8 * * 1-5", timeZone: Europe/Berlin, targetReplicas: 30}
  - {name: night, schedule: "0 20 * * *", targetReplicas: 2}
  capacityPolicy:
    targetAvailable: 5
  predictivePolicy: {}
)",
                       &obj),
            "");
  auto spec = DecodeSpec<PoolAutoscalerSpec>(obj);
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->min_replicas, 0);
  const auto& c = *spec->capacity_policy;
  EXPECT_EQ(c.tolerance->ToString(), "10%");
  EXPECT_EQ(c.scale_up->stabilization_window_seconds, 0);
  EXPECT_EQ(c.scale_down->stabilization_window_seconds, 300);
  const auto& p = *spec->predictive_policy;
  EXPECT_EQ(p.lookback_seconds, 86400);
  EXPECT_EQ(p.rate_window_seconds, 600);
  EXPECT_EQ(p.cold_creates_per_hour, 30);
  EXPECT_EQ(p.horizon_seconds, 0);
  // Bounds alone (upstream's "bounds enforcer") are a valid autoscaler too.
  EXPECT_EQ(AdmitError("  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 3\n"), "");
}

TEST(PoolAutoscalerAdmissionTest, BadInputNamesTheField) {
  struct Case {
    const char* spec;
    const char* want;
  };
  const Case cases[] = {
      {"  maxReplicas: 3\n", "spec.scaleTargetRef.kind: Required value"},
      {"  scaleTargetRef: {kind: Deployment, name: x}\n  maxReplicas: 3\n",
       "spec.scaleTargetRef.kind: Unsupported value: \"Deployment\""},
      {"  scaleTargetRef: {kind: SandboxSet}\n  maxReplicas: 3\n",
       "spec.scaleTargetRef.name: Required value"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool, namespace: team-b}\n  maxReplicas: 3\n",
       "spec.scaleTargetRef.namespace: Forbidden: \"team-b\": a PoolAutoscaler scales a SandboxSet "
       "of its own namespace"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 0\n",
       "spec.maxReplicas: Invalid value: 0: must be >= 1"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 3\n  minReplicas: 4\n",
       "spec.minReplicas: Invalid value: 4: must be <= maxReplicas (3)"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 3\n  minReplicas: -1\n",
       "spec.minReplicas: Invalid value: -1: must be >= 0"},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies:
  - {name: a, schedule: "0 8 * * *", targetReplicas: 1}
  - {name: a, schedule: "0 9 * * *", targetReplicas: 1}
)",
       "spec.cronPolicies[1].name: Duplicate value: \"a\""},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies: [{name: a, schedule: "61 8 * * *", targetReplicas: 1}]
)",
       "spec.cronPolicies[0].schedule: Invalid value: \"61 8 * * *\": cron schedule \"61 8 * * "
       "*\": "
       "minute field \"61\""},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies: [{name: a, schedule: "0 8 * * *", timeZone: Mars/Base, targetReplicas: 1}]
)",
       "spec.cronPolicies[0].timeZone: Invalid value: \"Mars/Base\""},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies: [{name: a, schedule: "0 0 30 2 *", targetReplicas: 1}]
)",
       "spec.cronPolicies[0].schedule: Invalid value: \"0 0 30 2 *\": never fires"},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies: [{name: a, schedule: "0 8 * * *", targetReplicas: 11}]
)",
       "spec.cronPolicies[0].targetReplicas: Invalid value: 11: must be between minReplicas (0) "
       "and maxReplicas (10)"},
      {R"(  scaleTargetRef: {kind: SandboxSet, name: pool}
  maxReplicas: 10
  cronPolicies: [{name: a, schedule: "0 8 * * *"}]
)",
       "spec.cronPolicies[0].targetReplicas: Required value"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  capacityPolicy: "
       "{tolerance: 1}\n",
       "spec.capacityPolicy.targetAvailable: Required value"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  capacityPolicy: "
       "{targetAvailable: 11}\n",
       "spec.capacityPolicy.targetAvailable: Invalid value: 11: must not be greater than "
       "maxReplicas (10)"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  capacityPolicy: "
       "{targetAvailable: \"150%\"}\n",
       "spec.capacityPolicy.targetAvailable: Invalid value: \"150%\""},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  capacityPolicy: "
       "{targetAvailable: 4, tolerance: 4}\n",
       "spec.capacityPolicy.tolerance: Invalid value: 4: must be less than targetAvailable"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  capacityPolicy: "
       "{targetAvailable: 4, scaleDown: {stabilizationWindowSeconds: 3601}}\n",
       "spec.capacityPolicy.scaleDown.stabilizationWindowSeconds: Invalid value: 3601: must be "
       "between 0 and 3600"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  "
       "predictivePolicy: {lookbackSeconds: 10}\n",
       "spec.predictivePolicy.lookbackSeconds: Invalid value: 10: must be between 600 and 604800"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: 10\n  "
       "predictivePolicy: {coldCreatesPerHour: -1}\n",
       "spec.predictivePolicy.coldCreatesPerHour: Invalid value: -1"},
      {"  scaleTargetRef: {kind: SandboxSet, name: pool}\n  maxReplicas: \"ten\"\n",
       "spec.maxReplicas"},
  };
  for (const Case& c : cases) {
    std::string err = AdmitError(c.spec);
    EXPECT_NE(err.find(c.want), std::string::npos) << c.spec << "\ngave: " << err;
  }
}

TEST(PoolAutoscalerAdmissionTest, StatusMustDecode) {
  Object obj = FromYaml(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: PoolAutoscaler
metadata: {name: pas, namespace: team-a}
status: {desiredReplicas: "many"}
)");
  EXPECT_FALSE(AdmitStatus(PoolAutoscalerKind(), obj).ok());
}

}  // namespace
}  // namespace warren::api
