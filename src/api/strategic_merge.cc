#include "api/strategic_merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>

namespace warren::api {
namespace {

// The merge key of the lists that merge instead of being replaced, by their path in the
// template. Every one of them is keyed by "name".
bool IsKeyedList(std::string_view path) {
  return path == "spec.containers" || path == "spec.initContainers" || path == "spec.volumes";
}

std::string Child(std::string_view path, std::string_view key) {
  return path.empty() ? std::string(key) : fmt::format("{}.{}", path, key);
}

Status MergeValue(Json& target, const Json& patch, const std::string& path);

Status MergeKeyedList(Json& target, const Json& patch, const std::string& path) {
  if (!target.is_array()) target = Json::array();
  for (size_t i = 0; i < patch.size(); ++i) {
    const Json& item = patch[i];
    std::string item_path = fmt::format("{}[{}]", path, i);
    auto name = item.is_object() ? item.find("name") : item.end();
    if (!item.is_object() || name == item.end() || !name->is_string()) {
      return InvalidArgumentError(
          fmt::format("{}: an item of a list merged by name must be an object with a string "
                      "\"name\"",
                      item_path));
    }
    auto same = std::find_if(target.begin(), target.end(), [&](const Json& t) {
      return t.is_object() && t.value("name", Json()) == *name;
    });
    auto directive = item.find("$patch");
    if (directive != item.end()) {
      if (*directive != "delete") {
        return InvalidArgumentError(fmt::format("{}.$patch: only \"delete\" is supported, got {}",
                                                item_path, DumpJson(*directive)));
      }
      if (same != target.end()) target.erase(same);
      continue;
    }
    if (same == target.end()) {
      target.push_back(Json::object());
      same = std::prev(target.end());
    }
    RETURN_IF_ERROR(MergeValue(*same, item, item_path));
  }
  return Status::Ok();
}

Status MergeValue(Json& target, const Json& patch, const std::string& path) {
  if (!patch.is_object()) {
    target = patch;
    return Status::Ok();
  }
  if (!target.is_object()) target = Json::object();
  for (const auto& [key, value] : patch.items()) {
    std::string child = Child(path, key);
    if (value.is_null()) {
      target.erase(key);
    } else if (IsKeyedList(child) && value.is_array()) {
      RETURN_IF_ERROR(MergeKeyedList(target[key], value, child));
    } else {
      RETURN_IF_ERROR(MergeValue(target[key], value, child));
    }
  }
  return Status::Ok();
}

}  // namespace

Status ApplyPodTemplateStrategicMerge(Json& pod_template, const Json& patch) {
  if (!patch.is_object()) {
    return InvalidArgumentError(
        fmt::format("a strategic-merge patch of a pod template must be an object, got {}",
                    JsonTypeName(patch)));
  }
  Json merged = pod_template;
  RETURN_IF_ERROR(MergeValue(merged, patch, ""));
  pod_template = std::move(merged);
  return Status::Ok();
}

}  // namespace warren::api
