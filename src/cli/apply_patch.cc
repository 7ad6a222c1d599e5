#include "cli/apply_patch.h"

namespace warren::cli {

api::Json ThreeWayMergePatch(const api::Json& last_applied, const api::Json& desired,
                             const api::Json& live) {
  api::Json patch = api::Json::object();
  if (!desired.is_object()) return patch;
  for (const auto& [key, want] : desired.items()) {
    auto have = live.is_object() ? live.find(key) : live.end();
    if (live.is_object() && have != live.end() && *have == want) continue;
    if (want.is_object() && live.is_object() && have != live.end() && have->is_object()) {
      const api::Json& last_child =
          last_applied.is_object() && last_applied.contains(key) ? last_applied[key] : api::Json();
      api::Json sub = ThreeWayMergePatch(last_child, want, *have);
      if (!sub.empty()) patch[key] = std::move(sub);
    } else {
      patch[key] = want;
    }
  }
  if (last_applied.is_object()) {
    for (const auto& [key, was] : last_applied.items()) {
      if (!desired.contains(key) && live.is_object() && live.contains(key)) patch[key] = nullptr;
    }
  }
  return patch;
}

}  // namespace warren::cli
