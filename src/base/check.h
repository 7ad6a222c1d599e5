#pragma once

#include <sstream>
#include <string>

// CHECK is for broken invariants (bugs): it prints where and why, then aborts. Never CHECK
// external input; return a Status instead.

namespace warren::base {
[[noreturn]] void CheckFailed(const char* file, int line, const char* expr, const std::string& msg);
}  // namespace warren::base

#define CHECK(cond)                                                          \
  do {                                                                       \
    if (!(cond)) [[unlikely]]                                                \
      ::warren::base::CheckFailed(__FILE__, __LINE__, #cond, std::string()); \
  } while (0)

// CHECK_MSG(cond, "a" << value) streams a message into the failure report.
#define CHECK_MSG(cond, stream_expr)                                                  \
  do {                                                                                \
    if (!(cond)) [[unlikely]] {                                                       \
      std::ostringstream warren_check_os_;                                            \
      warren_check_os_ << stream_expr;                                                \
      ::warren::base::CheckFailed(__FILE__, __LINE__, #cond, warren_check_os_.str()); \
    }                                                                                 \
  } while (0)

#define CHECK_OK(status_expr)                                              \
  do {                                                                     \
    const ::warren::Status& warren_check_status_ = (status_expr);          \
    CHECK_MSG(warren_check_status_.ok(), warren_check_status_.ToString()); \
  } while (0)
