#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"

namespace warren::api {

// Kubernetes IntOrString: a count (3) or a percentage ("20%"). Value type.
struct IntOrString {
  bool is_string = false;
  int64_t int_value = 0;
  std::string str_value;

  static IntOrString Int(int64_t v) { return {false, v, {}}; }
  static IntOrString String(std::string s) { return {true, 0, std::move(s)}; }

  // A count for `total` items: ints as they are, "N%" as total*N/100 rounded up or down.
  // A string that is not "N%" → InvalidArgument.
  Result<int64_t> Scaled(int64_t total, bool round_up) const;
  std::string ToString() const { return is_string ? str_value : std::to_string(int_value); }

  friend bool operator==(const IntOrString&, const IntOrString&) = default;
};

}  // namespace warren::api
