#include "api/probe_validation.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/admission.h"
#include "api/kinds.h"
#include "api/object_codec.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"

namespace warren::api {
namespace {

// Admits a Sandbox whose container carries `container_extra` (YAML flow fields after image) and
// whose spec carries `spec_extra`; returns the error message ("" when admitted).
std::string AdmitSandboxError(std::string_view container_extra, std::string_view spec_extra = "",
                              Object* out = nullptr) {
  const std::string yaml = fmt::format(R"(
apiVersion: agents.kruise.io/v1alpha1
kind: Sandbox
metadata: {{name: s, namespace: default}}
spec:
  template:
    spec:
      containers:
      - {{name: main, image: base, ports: [{{name: web, containerPort: 8080}}]{}}}
{}
)",
                                       container_extra, spec_extra);
  auto doc = ParseYaml(yaml);
  EXPECT_TRUE(doc.ok()) << doc.status() << yaml;
  auto obj = ObjectFromJson(*doc);
  EXPECT_TRUE(obj.ok()) << obj.status();
  const KindInfo* kind = BuiltinKinds().ForObject(obj->api_version, obj->kind);
  Status s = AdmitCreate(*kind, *obj);
  if (out) *out = *obj;
  return s.ok() ? "" : s.message();
}

TEST(ProbeAdmission, ContainerProbesRoundTripWithoutDefaultsWritten) {
  Object obj;
  ASSERT_EQ(AdmitSandboxError(
                R"(, readinessProbe: {httpGet: {path: /ready, port: web}, periodSeconds: 2},
                     livenessProbe: {exec: {command: [cat, /tmp/ok]}, failureThreshold: 2},
                     startupProbe: {tcpSocket: {port: 8080}})",
                "", &obj),
            "");
  auto spec = DecodeSpec<SandboxSpec>(obj);
  ASSERT_TRUE(spec.ok()) << spec.status();
  const Container& c = spec->pod_template->spec.containers[0];
  ASSERT_TRUE(c.readiness_probe && c.readiness_probe->http_get);
  EXPECT_EQ(c.readiness_probe->http_get->port.str_value, "web");
  EXPECT_EQ(ResolvedTimings(*c.readiness_probe).period_seconds, 2);
  EXPECT_EQ(ResolvedTimings(*c.readiness_probe).failure_threshold, 3);  // Kubernetes' default
  ASSERT_TRUE(c.liveness_probe && c.liveness_probe->exec);
  EXPECT_EQ(c.liveness_probe->exec->command[1], "/tmp/ok");
  ASSERT_TRUE(c.startup_probe && c.startup_probe->tcp_socket);
  EXPECT_EQ(c.startup_probe->tcp_socket->port.int_value, 8080);
  // What the user did not write stays unwritten.
  const Json& stored = obj.spec()["template"]["spec"]["containers"][0]["readinessProbe"];
  EXPECT_FALSE(stored.contains("timeoutSeconds")) << DumpJson(stored);
}

TEST(ProbeAdmission, BadContainerProbesNameTheirField) {
  const std::string c0 = "spec.template.spec.containers[0].";
  struct Case {
    std::string extra;
    std::string want;
  } cases[] = {
      {", readinessProbe: {exec: {command: [\"true\"]}, periodSeconds: 0}",
       c0 + "readinessProbe.periodSeconds: Invalid value: 0: must be >= 1"},
      {", livenessProbe: {exec: {command: [\"true\"]}, successThreshold: 2}",
       c0 + "livenessProbe.successThreshold: Invalid value: 2: must be 1"},
      {", startupProbe: {periodSeconds: 5}",
       c0 + "startupProbe: must specify a handler type: exec, httpGet or tcpSocket"},
      {", readinessProbe: {exec: {command: [\"true\"]}, tcpSocket: {port: 1}}",
       c0 + "readinessProbe: may not specify more than 1 handler type"},
      {", readinessProbe: {httpGet: {port: admin}}",
       c0 + "readinessProbe.httpGet.port: Invalid value: \"admin\": no container port of that "
            "name"},
      {", readinessProbe: {httpGet: {port: 70000}}",
       c0 + "readinessProbe.httpGet.port: Invalid value: 70000: must be between 1 and 65535, "
            "inclusive"},
      {", readinessProbe: {httpGet: {port: 80, scheme: HTTPS}}",
       c0 + "readinessProbe.httpGet.scheme: Unsupported value: \"HTTPS\": supported values: "
            "\"HTTP\""},
      {", livenessProbe: {tcpSocket: {port: 80, host: 10.0.0.1}}",
       c0 + "livenessProbe.tcpSocket.host: Unsupported value: \"10.0.0.1\": supported values: "
            "\"\", \"localhost\", \"127.0.0.1\""},
      {", livenessProbe: {exec: {command: []}}", c0 + "livenessProbe.exec.command: Required value"},
      {", readinessProbe: {exec: {command: [\"true\"]}, timeoutSeconds: \"1\"}",
       c0 + "readinessProbe.timeoutSeconds: must be an integer"},
  };
  for (const Case& c : cases) {
    const std::string got = AdmitSandboxError(c.extra);
    EXPECT_NE(got.find(c.want), std::string::npos) << "extra: " << c.extra << "\n got: " << got;
  }
}

constexpr const char* kIdleProbe = R"(
  probes:
  - name: idle
    containerName: main
    exec: {command: [cat, /tmp/idle]}
    periodSeconds: 1
  autoPausePolicy:
    pause:
      whenProbedIdleState: {probe: idle, messageRegex: "^idle", thresholdDuration: 30s})";

TEST(ProbeAdmission, SandboxProbesAndAutoPausePolicy) {
  Object obj;
  ASSERT_EQ(AdmitSandboxError("", kIdleProbe, &obj), "");
  auto spec = DecodeSpec<SandboxProbeSpec>(obj);
  ASSERT_TRUE(spec.ok()) << spec.status();
  ASSERT_EQ(spec->probes.size(), 1u);
  EXPECT_EQ(spec->probes[0].name, "idle");
  ASSERT_TRUE(spec->probes[0].probe.exec);  // inline, as OpenKruise writes it
  EXPECT_EQ(ResolvedTimings(spec->probes[0].probe).period_seconds, 1);
  const auto& idle = spec->auto_pause_policy->pause->when_probed_idle_state;
  ASSERT_TRUE(idle);
  EXPECT_EQ(idle->threshold_duration.value, std::chrono::seconds(30));
  EXPECT_EQ(SandboxProbeConditionType("idle"), "agents.kruise.io/idle");
}

TEST(ProbeAdmission, BadSandboxProbesNameTheirField) {
  struct Case {
    std::string spec;
    std::string want;
  } cases[] = {
      {"  probes: [{name: Idle, exec: {command: [\"true\"]}}]",
       "spec.probes[0].name: invalid value \"Idle\": a lowercase RFC 1123 label"},
      {"  probes: [{name: a, exec: {command: [\"true\"]}}, {name: a, exec: {command: [\"x\"]}}]",
       "spec.probes[1].name: Duplicate value: \"a\""},
      {"  probes: [{name: a, containerName: side, exec: {command: [\"true\"]}}]",
       "spec.probes[0].containerName: Not found: \"side\""},
      {"  probes: [{name: a, exec: {command: [\"true\"]}, failureThreshold: 0}]",
       "spec.probes[0].failureThreshold: Invalid value: 0: must be >= 1"},
      {"  probes: [{name: a, exec: {command: [\"true\"]}}]\n  autoPausePolicy: {pause: "
       "{whenProbedIdleState: {probe: b, thresholdDuration: 1m}}}",
       "spec.autoPausePolicy.pause.whenProbedIdleState.probe: Not found: \"b\""},
      {"  probes: [{name: a, exec: {command: [\"true\"]}}]\n  autoPausePolicy: {pause: "
       "{whenProbedIdleState: {probe: a, messageRegex: \"(\", thresholdDuration: 1m}}}",
       "spec.autoPausePolicy.pause.whenProbedIdleState.messageRegex: Invalid value: \"(\""},
      {"  probes: [{name: a, exec: {command: [\"true\"]}}]\n  autoPausePolicy: {pause: "
       "{whenProbedIdleState: {probe: a, thresholdDuration: 0s}}}",
       "spec.autoPausePolicy.pause.whenProbedIdleState.thresholdDuration: Invalid value: \"0s\": "
       "must be >= 1s"},
      {"  probes: [{name: a, exec: {command: [\"true\"]}}]\n  autoPausePolicy: {resume: "
       "{whenProbedScheduleTime: {probe: a, timeFormat: unix}}}",
       "spec.autoPausePolicy.resume.whenProbedScheduleTime: Forbidden: not supported by Warren "
       "yet"},
  };
  for (const Case& c : cases) {
    const std::string got = AdmitSandboxError("", c.spec);
    EXPECT_NE(got.find(c.want), std::string::npos) << "spec: " << c.spec << "\n got: " << got;
  }
}

}  // namespace
}  // namespace warren::api
