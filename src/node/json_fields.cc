#include "node/json_fields.h"

#include <algorithm>

namespace warren::node {

bool EqualExceptKeys(const api::Json& a, const api::Json& b,
                     std::initializer_list<std::string_view> ignored) {
  if (!a.is_object() || !b.is_object()) return a == b;
  auto skip = [&](const std::string& key) {
    return std::find(ignored.begin(), ignored.end(), key) != ignored.end();
  };
  size_t compared = 0;
  for (auto it = a.begin(); it != a.end(); ++it) {
    if (skip(it.key())) continue;
    auto other = b.find(it.key());
    if (other == b.end() || *other != it.value()) return false;
    ++compared;
  }
  // Every kept key of `a` is in `b` with the same value; equal only if `b` has no others.
  size_t kept_in_b = 0;
  for (auto it = b.begin(); it != b.end(); ++it) kept_in_b += skip(it.key()) ? 0 : 1;
  return compared == kept_in_b;
}

}  // namespace warren::node
