#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace warren::obs::testing {

// One sample line of a scrape: `name{labels} value`.
struct ExposedSample {
  std::string name;  // with its _bucket/_sum/_count suffix, if any
  std::map<std::string, std::string> labels;
  double value = 0;
};

// One metric family of a scrape, with its HELP and TYPE lines.
struct ExposedFamily {
  std::string help, type;
  std::vector<ExposedSample> samples;
};

// Parses a Prometheus text 0.0.4 exposition as a scraper does, strictly: every family has one
// HELP and one TYPE line before its samples, each name appears as one family only, names and
// label names are well-formed, and every sample belongs to the family above it (histograms:
// _bucket, _sum, _count). InvalidArgument says what is wrong and where.
Result<std::map<std::string, ExposedFamily>> ParseExposition(std::string_view text);

// The sum of the values of `family`'s samples called `sample` (the family's name when empty)
// whose labels include every pair of `labels`; 0 when there are none.
double SumOf(const std::map<std::string, ExposedFamily>& families, std::string_view family,
             const std::map<std::string, std::string>& labels, std::string_view sample = "");

}  // namespace warren::obs::testing
