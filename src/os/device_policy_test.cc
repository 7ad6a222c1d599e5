#include "os/device_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace warren::os {
namespace {

TEST(DevicePolicyTest, DefaultRulesAreRuncsSetInV1Form) {
  std::vector<std::string> text;
  for (const DeviceRule& r : DefaultDeviceRules()) text.push_back(DeviceRuleText(r));
  EXPECT_THAT(text, ::testing::ElementsAre("c *:* m", "b *:* m", "c 1:3 rwm", "c 1:5 rwm",
                                           "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm", "c 5:0 rwm",
                                           "c 5:2 rwm", "c 136:* rwm"));
  EXPECT_EQ(DeviceRuleText(DeviceRule{'a', 8, -1, kDeviceRead}), "a 8:* r");
}

TEST(DevicePolicyTest, TheV2ProgramDeniesUnlessARuleReturnsFirst) {
  std::vector<bpf_insn> p = CompileDeviceProgram(DefaultDeviceRules());
  ASSERT_GE(p.size(), 8u);
  // It ends "r0 = 0; exit": what no rule allows is denied.
  EXPECT_EQ(p[p.size() - 2].code, BPF_ALU64 | BPF_MOV | BPF_K);
  EXPECT_EQ(p[p.size() - 2].imm, 0);
  EXPECT_EQ(p.back().code, BPF_JMP | BPF_EXIT);
  // Every conditional jump lands inside the program, on the next rule's first instruction or
  // the final deny.
  for (size_t i = 0; i < p.size(); ++i) {
    if (BPF_CLASS(p[i].code) == BPF_JMP && BPF_OP(p[i].code) == BPF_JNE) {
      size_t target = i + 1 + static_cast<size_t>(p[i].off);
      EXPECT_LT(target, p.size()) << i;
      EXPECT_TRUE(p[target - 1].code == (BPF_JMP | BPF_EXIT)) << "jump " << i << " lands mid-rule";
    }
  }
  // No rules: deny everything (the program is just the loads and the final deny).
  EXPECT_EQ(CompileDeviceProgram({}).size(), 8u);
}

}  // namespace
}  // namespace warren::os
