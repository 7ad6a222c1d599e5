#include "controller/disruption_budget.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api/admission.h"
#include "api/object_codec.h"
#include "api/policy_kinds.h"
#include "api/typed_codec.h"
#include "api/types/sandbox.h"
#include "api/yaml_codec.h"

namespace warren::controller {
namespace {

using namespace std::chrono_literals;

const base::WallTime kNow = base::WallTime(std::chrono::seconds(1'800'000'000));

api::Object Budget(std::string_view yaml_spec, std::string_view yaml_status = "{}") {
  std::string doc = fmt::format(
      "apiVersion: policy.kruise.io/v1alpha1\nkind: PodUnavailableBudget\n"
      "metadata: {{name: pub-x, namespace: team-a, generation: 2}}\nspec: {}\nstatus: {}\n",
      yaml_spec, yaml_status);
  return api::ObjectFromJson(*api::ParseYaml(doc)).value();
}

// A sandbox of team-a with `labels`, Running and Ready unless `phase`/`ready` say otherwise.
api::Object Sbx(std::string name, std::map<std::string, std::string> labels,
                std::string phase = "Running", bool ready = true) {
  api::Object o;
  o.api_version = "agents.kruise.io/v1alpha1";
  o.kind = "Sandbox";
  o.metadata.name = std::move(name);
  o.metadata.namespace_ = "team-a";
  o.metadata.labels = std::move(labels);
  api::SandboxStatus st;
  st.phase = std::move(phase);
  st.conditions.push_back({.type = "Ready", .status = ready ? "True" : "False"});
  api::EncodeStatus(st, o);
  return o;
}

std::vector<const api::Object*> Ptrs(const std::vector<api::Object>& v) {
  std::vector<const api::Object*> out;
  for (const auto& o : v) out.push_back(&o);
  return out;
}

BudgetView Eval(const api::Object& budget, const std::vector<api::Object>& sandboxes,
                std::optional<int32_t> replicas = std::nullopt, bool prune = false) {
  auto v = EvaluateBudget(budget, Ptrs(sandboxes), replicas, kNow, prune);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : BudgetView{};
}

// Three groups of three (g1, g2, g3), members m<g><i>, label app=job.
std::vector<api::Object> ThreeGroups() {
  std::vector<api::Object> out;
  for (int g = 1; g <= 3; ++g) {
    for (int i = 1; i <= 3; ++i) {
      out.push_back(Sbx(fmt::format("m{}{}", g, i),
                        {{"app", "job"}, {"warren.dev/group", fmt::format("g{}", g)}}));
    }
  }
  return out;
}

constexpr const char* kGroupSpec =
    "{selector: {matchLabels: {app: job}}, maxUnavailable: 1, "
    "podGroupPolicy: {groupLabelKey: warren.dev/group}}";

TEST(DisruptionBudgetTest, PlainCountsWithIntsAndPercentages) {
  std::vector<api::Object> s = {Sbx("a", {{"app", "web"}}), Sbx("b", {{"app", "web"}}),
                                Sbx("c", {{"app", "web"}}), Sbx("d", {{"app", "web"}}, "Pending"),
                                Sbx("other", {{"app", "db"}})};
  struct Case {
    std::string spec;
    int total, desired, current, allowed;
  };
  for (const Case& c : std::vector<Case>{
           {"{selector: {matchLabels: {app: web}}, maxUnavailable: 1}", 4, 3, 3, 0},
           {"{selector: {matchLabels: {app: web}}, maxUnavailable: 2}", 4, 2, 3, 1},
           // 30% of 4 rounds up to 2 unavailable: 2 desired.
           {"{selector: {matchLabels: {app: web}}, maxUnavailable: '30%'}", 4, 2, 3, 1},
           {"{selector: {matchLabels: {app: web}}, minAvailable: 2}", 4, 2, 3, 1},
           // 60% of 4 rounds up to 3.
           {"{selector: {matchLabels: {app: web}}, minAvailable: '60%'}", 4, 3, 3, 0},
           {"{selector: {matchLabels: {app: web}}, minAvailable: '0%'}", 4, 0, 3, 3},
           {"{selector: {matchLabels: {app: web}}, maxUnavailable: '100%'}", 4, 0, 3, 3},
       }) {
    BudgetView v = Eval(Budget(c.spec), s);
    EXPECT_EQ(v.status.total_replicas, c.total) << c.spec;
    EXPECT_EQ(v.status.desired_available, c.desired) << c.spec;
    EXPECT_EQ(v.status.current_available, c.current) << c.spec;
    EXPECT_EQ(v.status.unavailable_allowed, c.allowed) << c.spec;
    EXPECT_FALSE(v.grouped());
  }
}

TEST(DisruptionBudgetTest, FinishedSandboxesAreNotMembersAndDeletingOnesAreUnavailable) {
  std::vector<api::Object> s = {Sbx("a", {{"app", "web"}}), Sbx("b", {{"app", "web"}}, "Failed"),
                                Sbx("c", {{"app", "web"}}, "Succeeded"),
                                Sbx("d", {{"app", "web"}})};
  s[3].metadata.deletion_timestamp = kNow;
  BudgetView v = Eval(Budget("{selector: {matchLabels: {app: web}}, maxUnavailable: 1}"), s);
  EXPECT_EQ(v.status.total_replicas, 2);
  EXPECT_EQ(v.status.current_available, 1);
  EXPECT_EQ(v.units.at("d").why, "sandbox d is being deleted");
  EXPECT_EQ(JudgeEviction(v, s[1]).allowed, true) << "a finished sandbox is nobody's to protect";
}

TEST(DisruptionBudgetTest, TargetRefCountsTheSetsReplicas) {
  std::vector<api::Object> s = {Sbx("p-1", {}), Sbx("p-2", {}), Sbx("loose", {})};
  for (auto* o : {&s[0], &s[1]}) {
    o->metadata.owner_references.push_back({.api_version = "agents.kruise.io/v1alpha1",
                                            .kind = "SandboxSet",
                                            .name = "pool",
                                            .uid = "u1",
                                            .controller = true});
  }
  api::Object b = Budget("{targetRef: {kind: SandboxSet, name: pool}, minAvailable: 2}");
  // Three wanted, two there: one missing counts against the budget.
  BudgetView v = Eval(b, s, 3);
  EXPECT_EQ(v.status.total_replicas, 3);
  EXPECT_EQ(v.status.current_available, 2);
  EXPECT_EQ(v.status.unavailable_allowed, 0);
  EXPECT_FALSE(JudgeEviction(v, s[0]).allowed);
  EXPECT_TRUE(JudgeEviction(v, s[2]).allowed) << "not a member of the set";
  EXPECT_EQ(Eval(b, s, 2).status.unavailable_allowed, 0);
  EXPECT_EQ(Eval(Budget("{targetRef: {kind: SandboxSet, name: pool}, maxUnavailable: 1}"), s, 2)
                .status.unavailable_allowed,
            1);
}

TEST(DisruptionBudgetTest, AGroupIsUnavailableWhenAnyMemberIs) {
  std::vector<api::Object> s = ThreeGroups();
  s[4] = Sbx("m22", {{"app", "job"}, {"warren.dev/group", "g2"}}, "Running", /*ready=*/false);
  BudgetView v = Eval(Budget(kGroupSpec), s);
  EXPECT_TRUE(v.grouped());
  EXPECT_EQ(v.status.total_replicas, 3);
  EXPECT_EQ(v.status.current_available, 2);
  EXPECT_EQ(v.status.desired_available, 2);
  EXPECT_EQ(v.status.unavailable_allowed, 0);
  EXPECT_EQ(v.Unavailable(), std::vector<std::string>{"g2"});
  EXPECT_EQ(v.status.unavailable_pod_groups.count("g2"), 1u);
  EXPECT_EQ(v.status.conditions.at(0).status, "False");
  EXPECT_EQ(v.status.conditions.at(0).reason, "InsufficientPods");

  // A member of a whole group: refused, saying which group, of how many, what is down and the
  // rule.
  EvictionVerdict refused = JudgeEviction(v, s[0]);
  EXPECT_FALSE(refused.allowed);
  EXPECT_EQ(refused.message,
            "Cannot evict sandbox as it would violate the sandbox's disruption budget "
            "team-a/pub-x: group g1 of 3 would be unavailable, 1 group(s) already unavailable "
            "(g2: sandbox m22 is not Ready), maxUnavailable 1");
  // Another member of the broken group costs nothing, and is still recorded with its group.
  EvictionVerdict free = JudgeEviction(v, s[3]);
  EXPECT_TRUE(free.allowed);
  EXPECT_TRUE(free.record);
  EXPECT_EQ(free.message, "group g2 is already unavailable (sandbox m22 is not Ready)");

  // Healed, with g2 still in the recorded map (the controller has not looked yet) and no eviction
  // unconfirmed: the fresh view trusts what it sees.
  api::Object b = Budget(kGroupSpec);
  EncodeBudgetStatus(v.status, b);
  s[4] = Sbx("m22", {{"app", "job"}, {"warren.dev/group", "g2"}});
  BudgetView healed = Eval(b, s);
  EXPECT_TRUE(healed.Unavailable().empty());
  EXPECT_TRUE(JudgeEviction(healed, s[0]).allowed);
  EXPECT_TRUE(healed.status.unavailable_pod_groups.empty());
}

TEST(DisruptionBudgetTest, GroupBudgetsCountGroupsWithPercentagesAndMinAvailable) {
  std::vector<api::Object> s = ThreeGroups();
  auto spec = [](std::string rule) {
    return fmt::format(
        "{{selector: {{matchLabels: {{app: job}}}}, {}, podGroupPolicy: {{groupLabelKey: "
        "warren.dev/group}}}}",
        rule);
  };
  EXPECT_EQ(Eval(Budget(spec("maxUnavailable: '34%'")), s).status.unavailable_allowed, 2);
  EXPECT_EQ(Eval(Budget(spec("maxUnavailable: '33%'")), s).status.unavailable_allowed, 1);
  EXPECT_EQ(Eval(Budget(spec("minAvailable: 3")), s).status.unavailable_allowed, 0);
  EXPECT_EQ(Eval(Budget(spec("minAvailable: '50%'")), s).status.desired_available, 2);
  // A sandbox without the label is a group of its own, which no label value can name.
  s.push_back(Sbx("solo", {{"app", "job"}}));
  BudgetView v = Eval(Budget(spec("maxUnavailable: 1")), s);
  EXPECT_EQ(v.status.total_replicas, 4);
  EXPECT_EQ(v.unit_of.at("solo"), "sandbox/solo");
}

TEST(DisruptionBudgetTest, AGroupShortOfItsSizeIsUnavailable) {
  std::vector<api::Object> s = ThreeGroups();
  s.erase(s.begin() + 8);  // m33 gone
  api::Object b = Budget(
      "{selector: {matchLabels: {app: job}}, maxUnavailable: 1, "
      "podGroupPolicy: {groupLabelKey: warren.dev/group, groupSize: 3}}");
  BudgetView v = Eval(b, s);
  EXPECT_EQ(v.Unavailable(), std::vector<std::string>{"g3"});
  EXPECT_EQ(v.units.at("g3").why, "2 of 3 members there");
  EXPECT_FALSE(JudgeEviction(v, s[0]).allowed);
}

TEST(DisruptionBudgetTest, AnAdmittedEvictionTakesItsSlotUntilItsDeletionIsSeen) {
  std::vector<api::Object> s = ThreeGroups();
  api::Object b = Budget(kGroupSpec);
  BudgetView v = Eval(b, s);
  ASSERT_EQ(v.status.unavailable_allowed, 1);
  EvictionVerdict first = JudgeEviction(v, s[0]);
  ASSERT_TRUE(first.allowed && first.record);
  api::PodUnavailableBudgetStatus after = EvictionStatus(v, s[0], kNow);
  EXPECT_EQ(after.disrupted_pods.count("m11"), 1u);
  EXPECT_EQ(after.unavailable_pod_groups.count("g1"), 1u);
  EXPECT_EQ(after.unavailable_allowed, 0);
  EncodeBudgetStatus(after, b);

  // m11 is gone now. The eviction route's view (no prune) still counts g1 down: another group's
  // eviction is refused, another member of g1 goes for free.
  std::vector<api::Object> rest(s.begin() + 1, s.end());
  BudgetView fresh = Eval(b, rest);
  EXPECT_EQ(fresh.Unavailable(), std::vector<std::string>{"g1"});
  EXPECT_FALSE(JudgeEviction(fresh, rest[3]).allowed);
  EXPECT_TRUE(JudgeEviction(fresh, rest[0]).allowed);

  // The controller (prune: its list is newer than the budget) sees the deletion: g1 is whole
  // again with the members it has, and the slot is free.
  BudgetView pruned = Eval(b, rest, std::nullopt, /*prune=*/true);
  EXPECT_TRUE(pruned.status.disrupted_pods.empty());
  EXPECT_TRUE(pruned.status.unavailable_pod_groups.empty());
  EXPECT_EQ(pruned.status.unavailable_allowed, 1);

  // Unseen deletions stop counting after 20 s.
  auto later = EvaluateBudget(b, Ptrs(s), std::nullopt, kNow + kDisruptedSandboxTtl, false);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->status.disrupted_pods.empty());
  ASSERT_TRUE(NextExpiry(after).has_value());
  EXPECT_EQ(*NextExpiry(after), kNow + kDisruptedSandboxTtl);
}

TEST(DisruptionBudgetTest, PlainEvictedSandboxesCountUntilSeenGone) {
  std::vector<api::Object> s = {Sbx("a", {{"app", "web"}}), Sbx("b", {{"app", "web"}}),
                                Sbx("c", {{"app", "web"}})};
  api::Object b = Budget("{selector: {matchLabels: {app: web}}, maxUnavailable: 1}");
  BudgetView v = Eval(b, s);
  ASSERT_TRUE(JudgeEviction(v, s[0]).allowed);
  EncodeBudgetStatus(EvictionStatus(v, s[0], kNow), b);
  std::vector<api::Object> rest = {s[1], s[2]};
  BudgetView racing = Eval(b, rest);
  EXPECT_EQ(racing.status.total_replicas, 3);
  EvictionVerdict second = JudgeEviction(racing, rest[0]);
  EXPECT_FALSE(second.allowed);
  EXPECT_EQ(second.message,
            "Cannot evict sandbox as it would violate the sandbox's disruption budget "
            "team-a/pub-x: sandbox b of 3 would be unavailable, 1 sandbox(es) already "
            "unavailable (sandbox a was evicted), maxUnavailable 1");
  EXPECT_EQ(Eval(b, rest, std::nullopt, true).status.unavailable_allowed, 1);
}

TEST(DisruptionBudgetTest, StatusEncodesZeroCounts) {
  api::Object b = Budget("{selector: {matchLabels: {app: web}}, maxUnavailable: 0}");
  BudgetView v = Eval(b, {Sbx("a", {{"app", "web"}})});
  EncodeBudgetStatus(v.status, b);
  EXPECT_EQ(b.status()["unavailableAllowed"], 0);
  EXPECT_EQ(b.status()["totalReplicas"], 1);
  EXPECT_FALSE(b.status().contains("disruptedPods"));
}

TEST(DisruptionBudgetTest, AdmissionFollowsKruisesWebhook) {
  auto admit = [](std::string_view spec) {
    api::Object b = Budget(spec);
    return api::AdmitCreate(api::PodUnavailableBudgetKind(), b);
  };
  EXPECT_TRUE(admit(kGroupSpec).ok()) << admit(kGroupSpec);
  EXPECT_TRUE(admit("{targetRef: {kind: SandboxSet, name: pool}, minAvailable: '50%'}").ok());
  for (auto [spec, why] : std::vector<std::pair<std::string, std::string>>{
           {"{maxUnavailable: 1}", "exactly one of selector and targetRef"},
           {"{selector: {matchLabels: {a: b}}, targetRef: {kind: SandboxSet, name: p}, "
            "maxUnavailable: 1}",
            "exactly one of selector and targetRef"},
           {"{selector: {matchLabels: {a: b}}}", "exactly one of maxUnavailable and minAvailable"},
           {"{selector: {matchLabels: {a: b}}, maxUnavailable: 1, minAvailable: 1}",
            "exactly one of maxUnavailable and minAvailable"},
           {"{selector: {matchLabels: {a: b}}, maxUnavailable: '120%'}", "spec.maxUnavailable"},
           {"{selector: {matchLabels: {a: b}}, minAvailable: -1}", "spec.minAvailable"},
           {"{selector: {}, minAvailable: 1}", "spec.selector"},
           {"{targetRef: {kind: Deployment, name: p}, minAvailable: 1}", "spec.targetRef.kind"},
           {"{selector: {matchLabels: {a: b}}, maxUnavailable: 1, podGroupPolicy: {groupSize: 2}}",
            "spec.podGroupPolicy.groupLabelKey: Required value"},
           {"{selector: {matchLabels: {a: b}}, maxUnavailable: 1, "
            "podGroupPolicy: {groupLabelKey: g, groupSize: 0}}",
            "spec.podGroupPolicy.groupSize"},
       }) {
    Status s = admit(spec);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << spec;
    EXPECT_NE(s.message().find(why), std::string_view::npos) << spec << ": " << s;
  }
  // What it protects is fixed; how much is not.
  api::Object before = Budget(kGroupSpec);
  ASSERT_TRUE(api::AdmitCreate(api::PodUnavailableBudgetKind(), before).ok());
  api::Object looser = before;
  looser.spec()["maxUnavailable"] = 2;
  EXPECT_TRUE(api::AdmitUpdate(api::PodUnavailableBudgetKind(), before, looser).ok());
  api::Object moved = before;
  moved.spec()["selector"] = {{"matchLabels", {{"app", "other"}}}};
  EXPECT_EQ(api::AdmitUpdate(api::PodUnavailableBudgetKind(), before, moved).code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace warren::controller
