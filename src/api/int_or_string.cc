#include "api/int_or_string.h"

#include <fmt/format.h>

#include "base/strings.h"

namespace warren::api {

Result<int64_t> IntOrString::Scaled(int64_t total, bool round_up) const {
  if (!is_string) return int_value;
  std::string_view s = str_value;
  if (s.empty() || s.back() != '%') {
    return InvalidArgumentError(
        fmt::format("invalid value \"{}\": must be an integer or a percentage (e.g. \"20%\")", s));
  }
  auto percent = base::ParseInt64(s.substr(0, s.size() - 1));
  if (!percent || *percent < 0 || *percent > 1000000) {
    return InvalidArgumentError(
        fmt::format("invalid value \"{}\": must be an integer or a percentage (e.g. \"20%\")", s));
  }
  __int128 product = static_cast<__int128>(total) * *percent;
  __int128 v = round_up ? (product + 99) / 100 : product / 100;
  return static_cast<int64_t>(v);
}

}  // namespace warren::api
