#include "api/admission.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/types/sandbox_claim.h"
#include "api/types/sandbox_set.h"
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

// Admits `yaml` as a create of its kind; returns the error message ("" when admitted).
std::string AdmitError(std::string_view yaml, Object* out = nullptr) {
  Object obj = FromYaml(yaml);
  const KindInfo* kind = BuiltinKinds().ForObject(obj.api_version, obj.kind);
  if (kind == nullptr) return "unknown kind";
  Status s = AdmitCreate(*kind, obj);
  if (out) *out = obj;
  return s.ok() ? "" : s.message();
}

constexpr const char* kPool = R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: pool, namespace: default}
spec:
  template:
    spec:
      containers:
      - name: main
        image: base
        resources: {limits: {cpu: "1", memory: 1Gi}}
        ports: [{containerPort: 8080}]
)";

TEST(Admission, SandboxSetDefaults) {
  Object obj;
  ASSERT_EQ(AdmitError(kPool, &obj), "");
  auto spec = DecodeSpec<SandboxSetSpec>(obj);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->replicas, 0);
  ASSERT_TRUE(spec->update_strategy.max_unavailable);
  EXPECT_EQ(spec->update_strategy.max_unavailable->ToString(), "20%");
  const Container& c = spec->pod_template->spec.containers[0];
  EXPECT_EQ(c.ports[0].protocol, "TCP");
  EXPECT_EQ(c.resources.requests.at("cpu").MilliValue(), 1000);  // requests default to limits
  // Defaults are written into the document, next to what the user wrote.
  EXPECT_EQ(obj.spec()["updateStrategy"]["maxUnavailable"], "20%");
  EXPECT_EQ(obj.spec()["replicas"], 0);
}

TEST(Admission, SandboxClaimDefaults) {
  Object obj;
  ASSERT_EQ(AdmitError(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: c, namespace: default}
spec: {templateName: pool}
)",
                       &obj),
            "");
  EXPECT_EQ(obj.spec()["replicas"], 1);
  EXPECT_EQ(obj.spec()["claimTimeout"], "1m0s");
  EXPECT_EQ(obj.spec()["ttlAfterCompleted"], "1h0m0s");
  EXPECT_EQ(obj.spec()["createOnNoStock"], true);
  EXPECT_EQ(obj.spec()["waitReadyTimeout"], "30s");
}

TEST(Admission, MessagesNameTheOffendingField) {
  struct Case {
    const char* yaml;
    const char* message;
  } cases[] = {
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: p, namespace: default}
spec: {replicas: -1, templateRef: {name: t}})",
       R"(SandboxSet.agents.kruise.io "p" is invalid: spec.replicas: Invalid value: -1: must be >= 0)"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: p, namespace: default}
spec: {replicas: "3", templateRef: {name: t}})",
       "spec.replicas: must be an integer, got string"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  templateRef: {name: t}
  template: {spec: {containers: [{name: main, image: base}]}})",
       "spec: Invalid value: template and templateRef are mutually exclusive"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec: {})",
       "spec.template: Required value: one of template or templateRef is required"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: Bad_Name, namespace: default}
spec: {templateRef: {name: t}})",
       "metadata.name: invalid value \"Bad_Name\": a lowercase RFC 1123 subdomain"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default, labels: {"bad key!": x, ok: "-bad"}}
spec: {templateRef: {name: t}})",
       "metadata.labels: invalid value \"bad key!\""},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default, labels: {ok: "-bad"}}
spec: {templateRef: {name: t}})",
       "metadata.labels.ok: invalid value \"-bad\""},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s}
spec: {templateRef: {name: t}})",
       "metadata.namespace: Required value"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      runtimeClassName: kata
      containers:
      - {name: main, image: base, ports: [{containerPort: 70000}]}
      - {name: main})",
       "spec.template.spec.runtimeClassName: Unsupported value: \"kata\": supported values: "
       "\"native\", \"gvisor\""},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: base, resources: {limits: {memory: lots}}}])",
       "spec.template.spec.containers[0].resources.limits.memory: invalid quantity \"lots\""},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      containers:
      - {name: main, image: base, resources: {requests: {cpu: 2}, limits: {cpu: 1}}})",
       "spec.template.spec.containers[0].resources.requests.cpu: Invalid value: \"2\": must be "
       "less than or equal to cpu limit of 1"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: base}, {name: main}])",
       "spec.template.spec.containers[1].image: Required value"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      volumes: [{name: data, configMap: {name: x}}]
      containers: [{name: main, image: base}])",
       "spec.template.spec.volumes[0]: must specify a volume type: Warren supports emptyDir, "
       "hostPath and persistentVolumeClaim"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: c, namespace: default}
spec: {replicas: 0, claimTimeout: 10ms})",
       "spec.templateName: Required value"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: c, namespace: default}
spec: {templateName: p, replicas: 0, claimTimeout: 10ms})",
       "spec.replicas: Invalid value: 0: must be >= 1; spec.claimTimeout: Invalid value: "
       "\"10ms\": must be >= 1s"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: c, namespace: default}
spec: {templateName: p, claimTimeout: soon})",
       "spec.claimTimeout: Invalid value: \"soon\": must be a duration"},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxUpdateOps
metadata: {name: u, namespace: default}
spec: {updateStrategy: {type: Rolling}})",
       "spec.selector: Required value; spec.updateStrategy.type: Unsupported value: \"Rolling\""},
      {R"(apiVersion: agents.kruise.io/v1alpha1
kind: Checkpoint
metadata: {name: c, namespace: default}
spec: {sandboxName: s, persistentContents: [disk], ttlAfterFinished: forever})",
       "spec.persistentContents[0]: Unsupported value: \"disk\""},
      {R"(apiVersion: warren.dev/v1alpha1
kind: Node
metadata: {name: n, namespace: default})",
       "metadata.namespace: not allowed: Node is cluster-scoped"},
      {R"(apiVersion: warren.dev/v1alpha1
kind: Event
metadata: {name: e, namespace: default}
type: Bad)",
       "involvedObject.kind: Required value"},
  };
  for (const auto& c : cases) {
    std::string message = AdmitError(c.yaml);
    EXPECT_NE(message.find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << message << "\nfor:\n"
        << c.yaml;
  }
}

TEST(Admission, EveryProblemIsReportedAtOnce) {
  std::string message = AdmitError(R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      runtimeClassName: kata
      containers:
      - {name: main, image: base, ports: [{containerPort: 70000, protocol: HTTP}]})");
  EXPECT_NE(message.find("runtimeClassName: Unsupported value"), std::string::npos) << message;
  EXPECT_NE(message.find("ports[0].containerPort: Invalid value: 70000"), std::string::npos)
      << message;
  EXPECT_NE(message.find("ports[0].protocol: Unsupported value: \"HTTP\""), std::string::npos)
      << message;
}

TEST(Admission, ImmutableFields) {
  Object old_claim = FromYaml(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxClaim
metadata: {name: c, namespace: default}
spec: {templateName: pool, replicas: 2})");
  Object updated = old_claim;
  updated.spec()["replicas"] = 3;
  Status s = AdmitUpdate(SandboxClaimKind(), old_claim, updated);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.replicas: Invalid value: field is immutable"), std::string::npos)
      << s;
}

TEST(Admission, VolumesDefaultTheirSizeKeepItAndBoundIt) {
  Object vol;
  ASSERT_EQ(AdmitError(R"(apiVersion: warren.dev/v1alpha1
kind: Volume
metadata: {name: work, namespace: team}
spec: {})",
                       &vol),
            "");
  EXPECT_EQ(vol.spec()["size"], "1Gi");
  Object grown = vol;
  grown.spec()["size"] = "2Gi";
  Status s = AdmitUpdate(VolumeKind(), vol, grown);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.size: Invalid value: \"2Gi\": field is immutable (was \"1Gi\")"),
            std::string::npos)
      << s;
  for (const char* size : {"512Ki", "2Ti"}) {
    EXPECT_NE(AdmitError(fmt::format(R"(apiVersion: warren.dev/v1alpha1
kind: Volume
metadata: {{name: work, namespace: team}}
spec: {{size: {}}})",
                                     size))
                  .find("spec.size: Invalid value"),
              std::string::npos)
        << size;
  }
}

TEST(Admission, ImagePullJobsAreDefaultedAndBadFieldsNamed) {
  Object job;
  ASSERT_EQ(AdmitError(R"(apiVersion: apps.kruise.io/v1alpha1
kind: ImagePullJob
metadata: {name: warm, namespace: team}
spec: {image: "reg:5000/app:1", parallelism: "2"})",
                       &job),
            "");
  EXPECT_EQ(job.spec()["parallelism"], 2);
  EXPECT_EQ(job.spec()["pullPolicy"]["timeoutSeconds"], 600);
  EXPECT_EQ(job.spec()["pullPolicy"]["backoffLimit"], 3);
  EXPECT_EQ(job.spec()["completionPolicy"]["type"], "Always");
  EXPECT_EQ(job.spec()["imagePullPolicy"], "IfNotPresent");
  Object moved = job;
  moved.spec()["image"] = "reg:5000/app:2";
  moved.spec()["parallelism"] = 0;  // pausing is an edit it takes
  Status s = AdmitUpdate(ImagePullJobKind(), job, moved);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "ImagePullJob.apps.kruise.io \"warm\" is invalid: spec.image: Invalid value: field is "
            "immutable")
      << s;
  const std::pair<const char*, const char*> bad[] = {
      {"{}", "spec.image: Required value"},
      {"{image: a, parallelism: 50%}", "spec.parallelism: Invalid value: \"50%\""},
      {"{image: a, parallelism: -1}", "spec.parallelism: must be >= 0"},
      {"{image: a, selector: {names: [n, n]}}", "spec.selector.names: Duplicate value: \"n\""},
      {"{image: a, selector: {names: [n], matchLabels: {z: a}}}", "may not be combined"},
      {"{image: a, selector: {names: [n]}, podSelector: {}}", "spec.podSelector"},
      {"{image: a, completionPolicy: {type: Sometimes}}",
       "spec.completionPolicy.type: Unsupported"},
      {"{image: a, completionPolicy: {type: Never, ttlSecondsAfterFinished: 5}}",
       "only for type Always"},
      {"{image: a, completionPolicy: {activeDeadlineSeconds: 10}}",
       "spec.completionPolicy.activeDeadlineSeconds: must be >= spec.pullPolicy.timeoutSeconds "
       "(600)"},
      {"{image: a, imagePullPolicy: Never}", "spec.imagePullPolicy: Unsupported value: \"Never\""},
      {"{image: a, pullSecrets: [s]}", "spec.pullSecrets: Forbidden"},
      {"{image: \"a b\"}", "spec.image: Invalid value"},
  };
  for (const auto& [spec, want] : bad) {
    std::string got = AdmitError(
        fmt::format("apiVersion: apps.kruise.io/v1alpha1\nkind: ImagePullJob\nmetadata: {{name: j, "
                    "namespace: team}}\nspec: {}",
                    spec));
    EXPECT_NE(got.find(want), std::string::npos) << spec << " → " << got;
  }
}

TEST(Admission, SandboxUpdateOpsSteeringFieldsAreEditableTheRestImmutable) {
  Object ops;
  ASSERT_EQ(AdmitError(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxUpdateOps
metadata: {name: up, namespace: team}
spec:
  selector: {matchLabels: {app: a}}
  patch: {spec: {containers: [{name: main, image: "img:2"}]}}
  partition: 3)",
                       &ops),
            "");
  EXPECT_EQ(ops.spec()["updateStrategy"]["type"], "Recreate");
  EXPECT_EQ(ops.spec()["updateStrategy"]["maxUnavailable"], 1);
  EXPECT_EQ(ops.spec()["stateFilter"]["states"], Json::array({"Running"}));
  EXPECT_EQ(ops.spec()["partition"], 3);
  Object steered = ops;
  steered.spec()["paused"] = true;
  steered.spec()["partition"] = "50%";
  steered.spec()["updateStrategy"]["maxUnavailable"] = 4;
  EXPECT_TRUE(AdmitUpdate(SandboxUpdateOpsKind(), ops, steered).ok());
  Object changed = ops;
  changed.spec()["patch"]["spec"]["containers"][0]["image"] = "img:3";
  changed.spec()["stateFilter"]["states"] = Json::array({"Running", "Paused"});
  Status s = AdmitUpdate(SandboxUpdateOpsKind(), ops, changed);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("spec.patch: Invalid value: field is immutable"), std::string::npos)
      << s;
  EXPECT_NE(s.message().find("spec.stateFilter: Invalid value: field is immutable"),
            std::string::npos)
      << s;
  const std::pair<const char*, const char*> bad[] = {
      {"{selector: {matchLabels: {a: b}}, partition: -1}", "spec.partition: Invalid value: -1"},
      {"{selector: {matchLabels: {a: b}}, partition: 150%}", "spec.partition: Invalid value"},
      {"{selector: {matchLabels: {a: b}}, updateStrategy: {type: CheckpointRestore}}",
       "cannot restore a sandbox's processes"},
      {"{selector: {matchLabels: {a: b}}, stateFilter: {states: [Pending]}}",
       "spec.stateFilter.states[0]: Unsupported value"},
      {"{selector: {}}", "empty selector"},
  };
  for (const auto& [spec, want] : bad) {
    std::string got = AdmitError(fmt::format(
        "apiVersion: agents.kruise.io/v1alpha1\nkind: SandboxUpdateOps\nmetadata: {{name: u, "
        "namespace: team}}\nspec: {}",
        spec));
    EXPECT_NE(got.find(want), std::string::npos) << spec << " → " << got;
  }
}

TEST(Admission, AdvancedCronJobsAreDefaultedAndBadFieldsNamed) {
  Object job;
  ASSERT_EQ(AdmitError(R"(apiVersion: apps.kruise.io/v1alpha1
kind: AdvancedCronJob
metadata: {name: prewarm, namespace: team}
spec:
  schedule: "0 6 * * mon-fri"
  timeZone: Europe/Berlin
  template:
    imagePullJobTemplate:
      spec: {image: "reg:5000/app:1"})",
                       &job),
            "");
  EXPECT_EQ(job.spec()["concurrencyPolicy"], "Replace");
  EXPECT_EQ(job.spec()["successfulJobsHistoryLimit"], 3);
  EXPECT_EQ(job.spec()["failedJobsHistoryLimit"], 1);
  EXPECT_EQ(job.spec()["template"]["imagePullJobTemplate"]["spec"]["pullPolicy"]["backoffLimit"],
            3);
  const std::pair<const char*, const char*> bad[] = {
      {"{template: {sandboxSetReplicasTemplate: {name: p, replicas: 1}}}",
       "spec.schedule: Required value"},
      {"{schedule: \"61 * * * *\", template: {sandboxSetReplicasTemplate: {name: p, replicas: 1}}}",
       "minute field \"61\""},
      {"{schedule: \"@daily\", timeZone: Local, template: {sandboxSetReplicasTemplate: {name: p, "
       "replicas: 1}}}",
       "spec.timeZone: Invalid value: \"Local\""},
      {"{schedule: \"@daily\", timeZone: Mars/Olympus, template: {sandboxSetReplicasTemplate: "
       "{name: p, replicas: 1}}}",
       "spec.timeZone"},
      {"{schedule: \"@daily\", template: {}}", "exactly one of imagePullJobTemplate"},
      {"{schedule: \"@daily\", concurrencyPolicy: Allow, template: {imagePullJobTemplate: {spec: "
       "{image: a}}}}",
       "an image pull template takes Forbid or Replace"},
      {"{schedule: \"@daily\", template: {imagePullJobTemplate: {spec: {image: a, "
       "completionPolicy: {ttlSecondsAfterFinished: 5}}}}}",
       "ttlSecondsAfterFinished: Forbidden"},
      {"{schedule: \"@daily\", template: {imagePullJobTemplate: {spec: {parallelism: -1}}}}",
       "spec.template.imagePullJobTemplate.spec.image: Required value"},
      {"{schedule: \"@daily\", template: {sandboxSetReplicasTemplate: {name: p, replicas: -2}}}",
       "spec.template.sandboxSetReplicasTemplate.replicas: must be >= 0"},
  };
  for (const auto& [spec, want] : bad) {
    std::string got = AdmitError(fmt::format(
        "apiVersion: apps.kruise.io/v1alpha1\nkind: AdvancedCronJob\nmetadata: {{name: j, "
        "namespace: team}}\nspec: {}",
        spec));
    EXPECT_NE(got.find(want), std::string::npos) << spec << " → " << got;
  }
}

TEST(Admission, VolumeClaimTemplatesAndClaimVolumesAreChecked) {
  EXPECT_EQ(AdmitError(R"(apiVersion: agents.kruise.io/v1alpha1
kind: SandboxSet
metadata: {name: p, namespace: default}
spec:
  templateRef: {name: t}
  volumeClaimTemplates:
  - metadata: {name: work}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 64Mi}}})"),
            "");
  std::string bad = AdmitError(R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  template:
    spec:
      containers: [{name: main, image: base}]
      volumes: [{name: v, persistentVolumeClaim: {}}]
  volumeClaimTemplates:
  - metadata: {name: Work}
  - metadata: {name: w2}
    spec: {resources: {requests: {storage: 10Ti, cpu: "1"}}})");
  EXPECT_NE(bad.find("spec.template.spec.volumes[0].persistentVolumeClaim.claimName: Required"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find("spec.volumeClaimTemplates[0].metadata.name"), std::string::npos) << bad;
  EXPECT_NE(bad.find("spec.volumeClaimTemplates[1].spec.resources.requests.storage: Invalid "
                     "value: \"10Ti\": must be between 1Mi and 1Ti"),
            std::string::npos)
      << bad;
  EXPECT_NE(bad.find("spec.volumeClaimTemplates[1].spec.resources.requests.cpu: Unsupported"),
            std::string::npos)
      << bad;
}

TEST(Admission, KindMismatchIsRejected) {
  Object obj = FromYaml("apiVersion: agents.kruise.io/v1beta9\nkind: Sandbox\nmetadata: {name: s}");
  Status s = AdmitCreate(SandboxKind(), obj);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("expected apiVersion \"agents.kruise.io/v1alpha1\""),
            std::string::npos)
      << s;
}

TEST(TypedCodec, EncodeKeepsFieldsTheStructDoesNotName) {
  Object obj = FromYaml(R"(apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {name: s, namespace: default}
spec:
  paused: false
  somethingNew: {x: 1}
  template:
    spec:
      nodeSelector: {disk: ssd}
      containers:
      - name: main
        image: base
        livenessProbe: {exec: {command: ["true"]}}
        env: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}}}]
status:
  phase: Running
  futureStatus: 7
)");
  auto spec = DecodeSpec<SandboxSpec>(obj);
  ASSERT_TRUE(spec.ok()) << spec.status();
  spec->paused = true;
  spec->pod_template->spec.containers[0].image = "python";
  spec->pod_template->spec.containers[0].env[0].value = "v";
  spec->pod_template->spec.containers.push_back(Container{.name = "side", .image = "busybox"});
  EncodeSpec(*spec, obj);

  const Json& s = obj.spec();
  EXPECT_EQ(s["paused"], true);
  EXPECT_EQ(s["somethingNew"]["x"], 1);
  EXPECT_EQ(s["template"]["spec"]["nodeSelector"]["disk"], "ssd");
  const Json& c0 = s["template"]["spec"]["containers"][0];
  EXPECT_EQ(c0["image"], "python");
  EXPECT_EQ(c0["livenessProbe"]["exec"]["command"][0], "true");
  EXPECT_EQ(c0["env"][0]["valueFrom"]["secretKeyRef"]["key"], "k");
  EXPECT_EQ(c0["env"][0]["value"], "v");
  EXPECT_EQ(s["template"]["spec"]["containers"][1]["image"], "busybox");

  auto status = DecodeStatus<SandboxStatus>(obj);
  ASSERT_TRUE(status.ok());
  status->phase = "Paused";
  SetCondition(status->conditions, Condition{.type = "Ready", .status = "False"}, base::WallTime{});
  EncodeStatus(*status, obj);
  EXPECT_EQ(obj.status()["phase"], "Paused");
  EXPECT_EQ(obj.status()["futureStatus"], 7);
  EXPECT_EQ(obj.status()["conditions"][0]["type"], "Ready");
}

TEST(TypedCodec, ZeroValuesAreOmittedAndOptionalsKept) {
  Object obj;
  SandboxClaimSpec spec;
  spec.template_name = "p";
  spec.create_on_no_stock = false;  // optional: false is written
  spec.skip_init_runtime = false;   // plain bool: omitted
  EncodeSpec(spec, obj);
  EXPECT_EQ(obj.spec(), Json::parse(R"({"templateName":"p","createOnNoStock":false})"));
}

TEST(TypedCodec, ConditionsKeepTransitionTimeUntilStatusChanges) {
  std::vector<Condition> conds;
  base::WallTime t1{std::chrono::seconds(100)}, t2{std::chrono::seconds(200)};
  EXPECT_TRUE(SetCondition(conds, {.type = "Ready", .status = "False", .reason = "A"}, t1));
  EXPECT_TRUE(SetCondition(conds, {.type = "Ready", .status = "False", .reason = "B"}, t2));
  EXPECT_EQ(conds[0].last_transition_time, t1);
  EXPECT_FALSE(SetCondition(conds, {.type = "Ready", .status = "False", .reason = "B"}, t2));
  EXPECT_TRUE(SetCondition(conds, {.type = "Ready", .status = "True", .reason = "B"}, t2));
  EXPECT_EQ(conds[0].last_transition_time, t2);
  EXPECT_TRUE(IsConditionTrue(conds, "Ready"));
}

TEST(Kinds, ResolveEveryNameUsersType) {
  const KindRegistry& r = BuiltinKinds();
  for (const char* name : {"sbs", "sandboxset", "sandboxsets", "SandboxSet", "SANDBOXSETS",
                           "sandboxsets.agents.kruise.io", "sbs.agents.kruise.io"}) {
    const KindInfo* k = r.Resolve(name);
    ASSERT_NE(k, nullptr) << name;
    EXPECT_EQ(k->kind, "SandboxSet") << name;
  }
  EXPECT_EQ(r.Resolve("sbx")->kind, "Sandbox");
  EXPECT_EQ(r.Resolve("sbc")->kind, "SandboxClaim");
  EXPECT_EQ(r.Resolve("sbt")->kind, "SandboxTemplate");
  EXPECT_EQ(r.Resolve("suo")->kind, "SandboxUpdateOps");
  EXPECT_EQ(r.Resolve("cp")->kind, "Checkpoint");
  EXPECT_EQ(r.Resolve("no")->kind, "Node");
  EXPECT_EQ(r.Resolve("ev")->kind, "Event");
  EXPECT_EQ(r.Resolve("pods"), nullptr);
  EXPECT_EQ(r.Resolve("sbs.apps"), nullptr);
  EXPECT_EQ(r.ForResource("agents.kruise.io", "v1alpha1", "sandboxes")->kind, "Sandbox");
  EXPECT_FALSE(NodeKind().namespaced);
  EXPECT_TRUE(SandboxSetKind().scale_subresource);
  EXPECT_EQ(SandboxSetKind().GroupKind(), "SandboxSet.agents.kruise.io");
}

}  // namespace
}  // namespace warren::api

namespace warren::api {
namespace {

TEST(TrafficPolicyAdmissionTest, WhatWarrenEnforcesIsAdmittedAndDefaulted) {
  Object out;
  EXPECT_EQ(AdmitError(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: TrafficPolicy
metadata: {name: tp, namespace: default}
spec:
  selector: {matchLabels: {team: a}}
  egress:
    rules:
    - {action: reject, to: [{cidr: 0.0.0.0/0}]}
    - {action: allow, to: [{fqdn: "*.pypi.org"}, {cidr: 1.1.1.1}]}
)",
                       &out),
            "");
  EXPECT_EQ(out.spec()["priority"], 1000);
}

TEST(TrafficPolicyAdmissionTest, WhatItCannotEnforceIsRefusedNamingTheField) {
  auto policy = [](std::string_view egress) {
    return fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: TrafficPolicy
metadata: {{name: tp, namespace: default}}
spec:
{}
)",
                       egress);
  };
  std::string e = AdmitError(policy("  egress: {rules: [{action: reject, to: [{fqdn: a.com}]}]}"));
  EXPECT_NE(e.find("spec.egress.rules[0].to[0].fqdn: Unsupported value: names are matched in allow "
                   "rules only"),
            std::string::npos)
      << e;
  e = AdmitError(policy("  egress: {rules: [{action: deny, to: [{cidr: 1.1.1.1}]}]}"));
  EXPECT_NE(e.find("spec.egress.rules[0].action: Unsupported value: \"deny\""), std::string::npos)
      << e;
  e = AdmitError(
      policy("  egress: {rules: [{action: allow, to: [{cidr: 1.1.1.1, fqdn: a.com}]}]}"));
  EXPECT_NE(e.find("spec.egress.rules[0].to[0]: Invalid value: exactly one of"), std::string::npos)
      << e;
  e = AdmitError(policy("  egress: {rules: [{action: allow, to: [{service: {name: x}}]}]}"));
  EXPECT_NE(e.find("to[0].service: Unsupported value"), std::string::npos) << e;
  e = AdmitError(
      policy("  egress: {rules: [{action: allow, to: [{cidr: 1.1.1.1}], ports: [{port: 443}]}]}"));
  EXPECT_NE(e.find("spec.egress.rules[0].ports: Unsupported value"), std::string::npos) << e;
  e = AdmitError(policy("  ingress: {rules: [{action: allow, from: [{cidr: 1.1.1.1}]}]}"));
  EXPECT_NE(e.find("spec.ingress.rules: Unsupported value"), std::string::npos) << e;
  e = AdmitError(policy("  egress: {rules: [{action: allow}]}"));
  EXPECT_NE(e.find("spec.egress.rules[0].to: Required value"), std::string::npos) << e;
  std::string many = "  egress: {rules: [";
  for (int i = 0; i < 21; ++i)
    many += fmt::format("{}{{action: allow, to: [{{cidr: 1.1.1.{}}}]}}", i ? "," : "", i);
  e = AdmitError(policy(many + "]}"));
  EXPECT_NE(e.find("21 peers: must have at most 20"), std::string::npos) << e;
}

}  // namespace
}  // namespace warren::api
