#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/ids.h"

namespace warren::base {
namespace {

bool IsLowerHex(const std::string& s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Several blocks of random bytes on two threads: every id well formed, none repeated (a block
// reused, or two threads sharing one, would repeat them).
TEST(NewRequestIdTest, IdsAreHexAndNeverRepeatAcrossBlocksAndThreads) {
  std::vector<std::string> a, b;
  std::thread other([&] {
    for (int i = 0; i < 1000; ++i) b.push_back(NewRequestId());
  });
  for (int i = 0; i < 1000; ++i) a.push_back(NewRequestId());
  other.join();
  std::set<std::string> seen;
  for (const auto* ids : {&a, &b}) {
    for (const std::string& id : *ids) {
      EXPECT_EQ(id.size(), 32u);
      EXPECT_TRUE(IsLowerHex(id)) << id;
      seen.insert(id);
    }
  }
  EXPECT_EQ(seen.size(), 2000u);
}

}  // namespace
}  // namespace warren::base
