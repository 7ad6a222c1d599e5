#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace warren::os {

// Runs a host tool (argv[0] looked up in the standard PATH, LC_ALL=C) to its end. Ok on exit
// 0; otherwise the error names the tool, how it ended and the first few KiB it printed.
// NotFound when the tool is not installed.
Status RunTool(const std::vector<std::string>& argv);

}  // namespace warren::os
