#pragma once

#include <cstdint>
#include <vector>

namespace warren::base::testing {

// `n` distinct loopback TCP ports nothing listens on now: the kernel's picks for port 0, each
// probe socket held until all are picked (closed one by one, the kernel may hand a port out
// twice). Whoever binds one a moment later may still lose it to another process: rare on a test
// machine, and a caller that cannot afford it tries again with another.
std::vector<uint16_t> FreeLoopbackPorts(int n);
uint16_t FreeLoopbackPort();

}  // namespace warren::base::testing
