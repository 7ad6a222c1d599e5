#include <gtest/gtest.h>

#include <sstream>

#include "api/kinds.h"
#include "base/time_format.h"
#include "cli/apply_patch.h"
#include "cli/printer.h"
#include "cli/resource_args.h"

namespace warren::cli {
namespace {

using api::Json;
using std::chrono::seconds;

TEST(HumanAge, MatchesKubectl) {
  EXPECT_EQ(HumanAge(seconds(0)), "0s");
  EXPECT_EQ(HumanAge(seconds(59)), "59s");
  EXPECT_EQ(HumanAge(seconds(119)), "119s");
  EXPECT_EQ(HumanAge(seconds(5 * 60 + 3)), "5m3s");
  EXPECT_EQ(HumanAge(seconds(6 * 60)), "6m");
  EXPECT_EQ(HumanAge(seconds(42 * 60 + 7)), "42m");
  EXPECT_EQ(HumanAge(seconds(3 * 3600 + 20 * 60)), "3h20m");
  EXPECT_EQ(HumanAge(seconds(30 * 3600)), "30h");
  EXPECT_EQ(HumanAge(seconds(2 * 86400)), "2d");
  EXPECT_EQ(HumanAge(seconds(3 * 86400 + 5 * 3600)), "3d5h");
  EXPECT_EQ(HumanAge(seconds(40 * 86400)), "40d");
  EXPECT_EQ(HumanAge(seconds(3 * 365 * 86400 + 120 * 86400)), "3y120d");
  EXPECT_EQ(HumanAge(seconds(-5)), "<invalid>");
}

TEST(Table, AlignsColumnsLikeKubectl) {
  Table t({"NAME", "DESIRED", "AGE"});
  t.AddRow({"code-interpreter", "3", "5m3s"});
  t.AddRow({"p", "10", "2d"});
  std::ostringstream out;
  t.Print(out);
  EXPECT_EQ(out.str(),
            "NAME               DESIRED   AGE\n"
            "code-interpreter   3         5m3s\n"
            "p                  10        2d\n");
}

TEST(TableRow, UsesThePrinterColumns) {
  Json sbs = Json::parse(R"({"metadata": {"name": "pool", "namespace": "team",
                                          "creationTimestamp": "2026-01-01T00:00:00Z"},
                             "spec": {"replicas": 3}, "status": {"availableReplicas": 2}})");
  auto now = *base::ParseRfc3339("2026-01-01T00:05:03Z");
  TableOptions opts;
  EXPECT_EQ(TableHeader(api::SandboxSetKind(), opts),
            (std::vector<std::string>{"NAME", "DESIRED", "REPLICAS", "AVAILABLE", "AGE"}));
  EXPECT_EQ(TableRow(api::SandboxSetKind(), sbs, opts, now),
            (std::vector<std::string>{"pool", "3", "0", "2", "5m3s"}));
  opts.with_namespace = true;
  opts.qualified_names = true;
  auto row = TableRow(api::SandboxSetKind(), sbs, opts, now);
  EXPECT_EQ(row[0], "team");
  EXPECT_EQ(row[1], "sandboxset.agents.kruise.io/pool");
}

TEST(ThreeWayMergePatch, KubectlApplySemantics) {
  Json last = Json::parse(
      R"({"spec": {"replicas": 3, "paused": true}, "metadata": {"labels": {"a": "1"}}})");
  Json desired = Json::parse(R"({"spec": {"replicas": 4}, "metadata": {"labels": {"a": "1"}}})");
  Json live = Json::parse(R"({"spec": {"replicas": 3, "paused": true, "defaulted": "x"},
                              "metadata": {"labels": {"a": "1", "added-by-controller": "y"},
                                           "uid": "u"},
                              "status": {"phase": "Running"}})");
  Json patch = ThreeWayMergePatch(last, desired, live);
  // Changed: replicas. Removed from the manifest: paused. Left alone: defaults, other labels,
  // server fields, status.
  EXPECT_EQ(patch, Json::parse(R"({"spec": {"replicas": 4, "paused": null}})"));
  EXPECT_TRUE(ThreeWayMergePatch(desired, desired, live).contains("spec"));
  Json same = ThreeWayMergePatch(Json(), Json::parse(R"({"spec": {"replicas": 3}})"), live);
  EXPECT_TRUE(same.empty()) << same;
}

TEST(ResourceArgs, KubectlForms) {
  const auto& kinds = api::BuiltinKinds();
  auto a = ParseResourceArgs(kinds, {"sbs,sbx"});
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 2u);
  EXPECT_EQ((*a)[0].kind->kind, "SandboxSet");
  EXPECT_EQ((*a)[1].kind->kind, "Sandbox");
  auto b = ParseResourceArgs(kinds, {"sandboxset", "p1", "p2"});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[1].name, "p2");
  auto c = ParseResourceArgs(kinds, {"sbs/p1", "sbx/x"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ((*c)[1].kind->kind, "Sandbox");
  EXPECT_EQ((*c)[1].name, "x");
  auto bad = ParseResourceArgs(kinds, {"pods"});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("doesn't have a resource type \"pods\""),
            std::string::npos);
  EXPECT_FALSE(ParseResourceArgs(kinds, {"sbs/p", "x"}).ok());
  EXPECT_FALSE(ParseResourceArgs(kinds, {}).ok());
}

TEST(Describe, ShowsMetadataSpecConditionsAndEvents) {
  Json obj = Json::parse(R"({"apiVersion": "agents.kruise.io/v1alpha1", "kind": "Sandbox",
    "metadata": {"name": "s", "namespace": "default", "labels": {"agents.kruise.io/sandbox-pool": "p"},
                 "creationTimestamp": "2026-01-01T00:00:00Z"},
    "spec": {"template": {"spec": {"containers": [{"name": "main", "image": "base"}]}}},
    "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True", "reason": "PodReady"}]}})");
  // Listed oldest first whatever the server's order; a repeated event shows its count.
  Json events = Json::parse(R"({"items": [{"type": "Warning", "reason": "Slow", "message": "again",
    "source": {"component": "node"}, "count": 3, "firstTimestamp": "2026-01-01T00:00:20Z",
    "lastTimestamp": "2026-01-01T00:01:05Z"},
    {"type": "Normal", "reason": "Created", "message": "made it",
    "source": {"component": "sandbox-controller"}, "lastTimestamp": "2026-01-01T00:00:10Z"},
    {"type": 7, "reason": ["odd"], "message": null}]})");
  std::string text =
      Describe(api::SandboxKind(), obj, events, *base::ParseRfc3339("2026-01-01T00:01:10Z"));
  EXPECT_NE(text.find("Name:         s\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Labels:       agents.kruise.io/sandbox-pool=p\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Image:  base"), std::string::npos) << text;
  EXPECT_NE(text.find("Phase:  Running"), std::string::npos) << text;
  EXPECT_NE(text.find("  Ready   True     PodReady\n"), std::string::npos) << text;
  size_t created =
      text.find("  Normal    Created   60s                sandbox-controller   made it\n");
  size_t slow = text.find("  Warning   Slow      5s (x3 over 50s)   node                 again\n");
  EXPECT_NE(created, std::string::npos) << text;
  EXPECT_NE(slow, std::string::npos) << text;
  EXPECT_LT(created, slow) << text;
}

}  // namespace
}  // namespace warren::cli
