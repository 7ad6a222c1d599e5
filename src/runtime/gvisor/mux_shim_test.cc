#include "runtime/gvisor/mux_shim.h"

#include <gtest/gtest.h>

#include <set>

namespace warren::runtime::gvisor::mux {
namespace {

TEST(FreeStreamId, IdsStartOverAfterTwoToTheThirtyOneDialsPastTheOpenOnes) {
  std::set<uint32_t> open = {1, 3, 7};
  auto in_use = [&](uint32_t id) { return open.count(id) != 0; };
  EXPECT_EQ(FreeStreamId(5, in_use), 5u);
  EXPECT_EQ(FreeStreamId(0xFFFFFFFFu, in_use), 0xFFFFFFFFu);
  // The id after the last one wraps to 1: 1 and 3 are still open, so 5.
  EXPECT_EQ(FreeStreamId(0xFFFFFFFFu + 2u, in_use), 5u);
  open.insert(5);
  EXPECT_EQ(FreeStreamId(1, in_use), 9u);
  EXPECT_NE(FreeStreamId(0, in_use), 0u) << "0 means every stream";
}

}  // namespace
}  // namespace warren::runtime::gvisor::mux
