#include "api/merge_patch.h"

namespace warren::api {

void ApplyMergePatch(Json& target, const Json& patch) {
  if (!patch.is_object()) {
    target = patch;
    return;
  }
  if (!target.is_object()) target = Json::object();
  for (const auto& [key, value] : patch.items()) {
    if (value.is_null()) {
      target.erase(key);
    } else {
      ApplyMergePatch(target[key], value);
    }
  }
}

Json CreateMergePatch(const Json& from, const Json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  Json patch = Json::object();
  for (const auto& [key, value] : from.items()) {
    if (!to.contains(key)) patch[key] = nullptr;
  }
  for (const auto& [key, value] : to.items()) {
    auto it = from.find(key);
    if (it == from.end()) {
      patch[key] = value;
    } else if (*it != value) {
      if (it->is_object() && value.is_object()) {
        patch[key] = CreateMergePatch(*it, value);
      } else {
        patch[key] = value;
      }
    }
  }
  return patch;
}

}  // namespace warren::api
