#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

namespace warren::bench {

// A day of claims on one pool, as offsets in milliseconds from its start, ascending.
using DemandTrace = std::vector<int64_t>;

// A synthetic day of agent traffic from a fixed seed: a diurnal curve (quiet night, a morning
// ramp, a lunch dip, an afternoon peak, an evening tail), fan-out bursts (one agent starting
// tens to hundreds of sandboxes within two seconds, more often when traffic is high), and two
// quiet periods in the working day (an outage upstream, a holiday lull) where traffic falls to a
// tenth. The same seed gives the same trace (std::mt19937_64 and explicit arithmetic, no
// library distributions whose output may differ between standard libraries).
DemandTrace SyntheticDay(uint64_t seed, double hours = 24);

// A trace file: one claim per line, its time in seconds (fractions allowed) from any origin;
// '#' starts a comment. Sorted on read; the first claim is at its own offset.
Result<DemandTrace> ReadTraceFile(const std::string& path);

}  // namespace warren::bench
