#include "controller/sandboxset_member_index.h"

#include <gtest/gtest.h>

#include <random>

#include "api/types/labels.h"
#include "api/types/sandbox.h"
#include "store/testing/objects.h"

namespace warren::controller {
namespace {

namespace labels = api::labels;

struct Shape {
  std::string set_uid;  // "" = no SandboxSet owner (claimed away, or never a member)
  std::string hash;
  std::string phase;  // "" = no status yet
  bool ready = false;
  bool claimed = false;
  bool locked = false;
  bool deleting = false;
  bool paused = false;  // spec.paused
};

ObjectPtr Make(const std::string& name, const Shape& s) {
  api::Object o = store::testing::MakeSandbox(name);
  if (!s.set_uid.empty()) {
    o.metadata.owner_references.push_back({.api_version = "agents.kruise.io/v1alpha1",
                                           .kind = "SandboxSet",
                                           .name = "set-" + s.set_uid,
                                           .uid = s.set_uid,
                                           .controller = true});
  }
  o.metadata.labels[labels::kTemplateHash] = s.hash;
  o.metadata.labels[labels::kSandboxClaimed] = s.claimed ? "true" : "false";
  if (s.locked) o.metadata.annotations[api::annotations::kLock] = "a-lock";
  if (s.deleting) o.metadata.deletion_timestamp = base::WallTime{};
  if (s.paused) o.spec()["paused"] = true;
  if (!s.phase.empty()) {
    o.status()["phase"] = s.phase;
    o.status()["conditions"] =
        api::Json::array({{{"type", "Ready"}, {"status", s.ready ? "True" : "False"}}});
  }
  return std::make_shared<const api::Object>(std::move(o));
}

// What the counts must equal: every member classified from scratch.
MemberTally Walk(const SetMemberIndex& index, const std::string& set_uid,
                 const std::string& revision) {
  MemberTally t;
  for (const auto& m : index.MembersOf(set_uid)) {
    bool current = m->metadata.labels.at(labels::kTemplateHash) == revision;
    switch (ClassifyMember(*m)) {
      case MemberState::kDead:
        ++t.dead;
        break;
      case MemberState::kCreating:
        ++(current ? t.new_creating : t.old_creating);
        break;
      case MemberState::kAvailable:
        ++(current ? t.new_available : t.old_available);
        break;
      case MemberState::kHibernated:
        ++(current ? t.new_available : t.old_available);
        ++t.hibernated;
        break;
      default:
        break;
    }
  }
  return t;
}

TEST(SetMemberIndexTest, ACountedMemberMovesBetweenStatesAndLeavesItsSetOnAClaim) {
  SetMemberIndex index;
  index.Upsert("default/a", Make("a", {.set_uid = "u1", .hash = "h2"}));
  index.Upsert("default/b",
               Make("b", {.set_uid = "u1", .hash = "h2", .phase = "Running", .ready = true}));
  index.Upsert("default/c",
               Make("c", {.set_uid = "u1", .hash = "h1", .phase = "Running", .ready = true}));
  EXPECT_EQ(index.TallyOf("u1", "h2"),
            (MemberTally{.old_available = 1, .new_creating = 1, .new_available = 1}));
  // The set's template changed: what was current is old now.
  EXPECT_EQ(index.TallyOf("u1", "h3"), (MemberTally{.old_creating = 1, .old_available = 2}));

  // a becomes Ready; b is claimed away (its owner reference removed); c dies.
  index.Upsert("default/a",
               Make("a", {.set_uid = "u1", .hash = "h2", .phase = "Running", .ready = true}));
  index.Upsert("default/b",
               Make("b", {.hash = "h2", .phase = "Running", .ready = true, .claimed = true}));
  index.Upsert("default/c", Make("c", {.set_uid = "u1", .hash = "h1", .phase = "Failed"}));
  EXPECT_EQ(index.TallyOf("u1", "h2"), (MemberTally{.dead = 1, .new_available = 1}));
  EXPECT_EQ(index.MembersOf("u1").size(), 2u);

  index.Erase("default/c");
  index.Erase("default/a");
  index.Erase("default/never-seen");
  EXPECT_EQ(index.TallyOf("u1", "h2"), MemberTally{});
  EXPECT_TRUE(index.MembersOf("u1").empty());
}

TEST(SetMemberIndexTest, AHibernatedMemberIsStockAndCountedAsSuch) {
  SetMemberIndex index;
  // Pausing (spec.paused, still Running): neither claimable nor gone.
  index.Upsert(
      "default/a",
      Make("a",
           {.set_uid = "u1", .hash = "h1", .phase = "Running", .ready = true, .paused = true}));
  EXPECT_EQ(ClassifyMember(*index.MembersOf("u1")[0]), MemberState::kCreating);
  EXPECT_EQ(index.TallyOf("u1", "h1"), (MemberTally{.new_creating = 1}));
  // Paused by the node: available stock, hibernated.
  index.Upsert("default/a",
               Make("a", {.set_uid = "u1", .hash = "h1", .phase = "Paused", .paused = true}));
  EXPECT_EQ(ClassifyMember(*index.MembersOf("u1")[0]), MemberState::kHibernated);
  EXPECT_EQ(index.TallyOf("u1", "h1"), (MemberTally{.new_available = 1, .hibernated = 1}));
  EXPECT_EQ(index.TallyOf("u1", "h2"), (MemberTally{.old_available = 1, .hibernated = 1}));
  // Locked by a claim (its compare-and-swap unpauses it), or paused but not by its spec (a
  // resume under way): not stock to take again.
  index.Upsert(
      "default/a",
      Make("a",
           {.set_uid = "u1", .hash = "h1", .phase = "Paused", .locked = true, .paused = true}));
  EXPECT_EQ(index.TallyOf("u1", "h1"), (MemberTally{.new_creating = 1}));
  index.Upsert("default/a", Make("a", {.set_uid = "u1", .hash = "h1", .phase = "Paused"}));
  EXPECT_EQ(index.TallyOf("u1", "h1"), (MemberTally{.new_creating = 1}));
}

TEST(SetMemberIndexTest, CountsEqualAWalkOfTheMembersAfterAnyChanges) {
  SetMemberIndex index;
  std::mt19937 rng(20261204);
  const std::vector<std::string> sets = {"", "u1", "u2"}, hashes = {"h1", "h2"},
                                 phases = {"",       "Pending", "Running",
                                           "Paused", "Failed",  "Succeeded"};
  auto pick = [&](const auto& v) { return v[rng() % v.size()]; };
  for (int step = 0; step < 5000; ++step) {
    std::string name = "s" + std::to_string(rng() % 40);
    if (rng() % 6 == 0) {
      index.Erase("default/" + name);
    } else {
      index.Upsert("default/" + name, Make(name, {.set_uid = pick(sets),
                                                  .hash = pick(hashes),
                                                  .phase = pick(phases),
                                                  .ready = rng() % 2 == 0,
                                                  .claimed = rng() % 5 == 0,
                                                  .locked = rng() % 7 == 0,
                                                  .deleting = rng() % 9 == 0,
                                                  .paused = rng() % 3 == 0}));
    }
    for (const std::string uid : {"u1", "u2"}) {
      for (const auto& revision : hashes) {
        ASSERT_EQ(index.TallyOf(uid, revision), Walk(index, uid, revision))
            << "step " << step << " set " << uid << " revision " << revision;
      }
    }
  }
}

}  // namespace
}  // namespace warren::controller
