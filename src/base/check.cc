#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace warren::base {

void CheckFailed(const char* file, int line, const char* expr, const std::string& msg) {
  // stderr directly: the logger may be the thing that is broken.
  std::fprintf(stderr, "CHECK failed at %s:%d: %s%s%s\n", file, line, expr, msg.empty() ? "" : ": ",
               msg.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace warren::base
