#include "controller/update_ops_rollout.h"

#include <gtest/gtest.h>

namespace warren::controller {
namespace {

using api::IntOrString;
using S = UpdateState;

std::vector<RolloutMember> Members(std::initializer_list<S> states) {
  std::vector<RolloutMember> out;
  char name = 'a';
  for (S s : states) out.push_back({std::string(1, name++), s});
  return out;
}

RolloutPlan Plan(RolloutInput in) {
  auto plan = PlanRollout(in);
  EXPECT_TRUE(plan.ok()) << plan.status();
  return plan.ok() ? *plan : RolloutPlan{};
}

TEST(UpdateOpsRollout, StartsInNameOrderWithinMaxUnavailable) {
  RolloutInput in{.members = Members({S::kPending, S::kPending, S::kPending, S::kPending})};
  in.max_unavailable = IntOrString::Int(2);
  RolloutPlan p = Plan(in);
  EXPECT_EQ(p.start, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.updating, 2);
  EXPECT_FALSE(p.done);
  // Two in flight already: nothing more until one finishes.
  in.members = Members({S::kUpdating, S::kUpdating, S::kPending, S::kPending});
  EXPECT_TRUE(Plan(in).start.empty());
  in.members = Members({S::kUpdated, S::kUpdating, S::kPending, S::kPending});
  p = Plan(in);
  EXPECT_EQ(p.start, (std::vector<std::string>{"c"}));
  EXPECT_EQ(p.updated, 1);
  EXPECT_EQ(p.updating, 2);
}

TEST(UpdateOpsRollout, MaxUnavailablePercentRoundsUpAndIsAtLeastOne) {
  EXPECT_EQ(*ResolveMaxUnavailable(IntOrString::String("25%"), 10), 3);
  EXPECT_EQ(*ResolveMaxUnavailable(IntOrString::String("1%"), 10), 1);
  EXPECT_EQ(*ResolveMaxUnavailable(IntOrString::Int(0), 10), 1);
  EXPECT_EQ(*ResolveMaxUnavailable(IntOrString::Int(50), 10), 10);
  EXPECT_FALSE(ResolveMaxUnavailable(IntOrString::String("many"), 10).ok());
}

TEST(UpdateOpsRollout, PartitionFollowsCloneSetMath) {
  EXPECT_EQ(*ResolvePartition(std::nullopt, 10), 0);
  EXPECT_EQ(*ResolvePartition(IntOrString::Int(3), 10), 3);
  EXPECT_EQ(*ResolvePartition(IntOrString::Int(30), 10), 10);       // clamped
  EXPECT_EQ(*ResolvePartition(IntOrString::String("25%"), 10), 3);  // rounds up
  EXPECT_EQ(*ResolvePartition(IntOrString::String("99%"), 10), 9);  // one is still updated
  EXPECT_EQ(*ResolvePartition(IntOrString::String("100%"), 10), 10);
  EXPECT_EQ(*ResolvePartition(IntOrString::Int(10), 10), 10);
}

TEST(UpdateOpsRollout, PartitionKeepsTheLastOnesAndThenIsDone) {
  RolloutInput in{.members = Members({S::kPending, S::kPending, S::kPending, S::kPending})};
  in.max_unavailable = IntOrString::Int(4);
  in.partition = IntOrString::Int(3);
  EXPECT_EQ(Plan(in).start, (std::vector<std::string>{"a"}));
  in.members = Members({S::kUpdated, S::kPending, S::kPending, S::kPending});
  RolloutPlan p = Plan(in);
  EXPECT_TRUE(p.start.empty());
  EXPECT_TRUE(p.done);
  // Lowering the partition goes on from where it was.
  in.partition = IntOrString::Int(1);
  p = Plan(in);
  EXPECT_EQ(p.start, (std::vector<std::string>{"b", "c"}));
  EXPECT_FALSE(p.done);
}

TEST(UpdateOpsRollout, PausedOrStoppedStartsNoneButCounts) {
  RolloutInput in{.members = Members({S::kUpdating, S::kPending})};
  in.max_unavailable = IntOrString::Int(2);
  in.paused = true;
  RolloutPlan p = Plan(in);
  EXPECT_TRUE(p.start.empty());
  EXPECT_EQ(p.updating, 1);
  in.paused = false;
  in.stopped = true;
  EXPECT_TRUE(Plan(in).start.empty());
  in.stopped = false;
  EXPECT_EQ(Plan(in).start, (std::vector<std::string>{"b"}));
}

TEST(UpdateOpsRollout, AFailureStopsTheRollout) {
  RolloutInput in{.members = Members({S::kFailed, S::kPending, S::kPending})};
  in.max_unavailable = IntOrString::Int(3);
  RolloutPlan p = Plan(in);
  EXPECT_TRUE(p.start.empty());
  EXPECT_EQ(p.failed, 1);
  EXPECT_FALSE(p.done);
}

TEST(UpdateOpsRollout, NothingSelectedIsDone) {
  RolloutPlan p = Plan(RolloutInput{});
  EXPECT_TRUE(p.done);
  EXPECT_EQ(p.replicas, 0);
}

}  // namespace
}  // namespace warren::controller
