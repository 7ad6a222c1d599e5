#pragma once

#include <string>
#include <vector>

namespace warren::base {

// The names in directory `dir`, without "." and "..", sorted (readdir's order is arbitrary, so
// callers that act on each one do so in a stable order). Empty when the directory is missing or
// cannot be read: for scans of state directories and /proc, where a directory that vanished
// means there is nothing to do. Thread-safe.
std::vector<std::string> DirNames(const std::string& dir);

}  // namespace warren::base
